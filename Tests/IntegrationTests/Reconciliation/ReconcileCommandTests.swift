#if os(Linux)
import AppStoreModel
import Crypto
import FakeAppStore
import Foundation
import Testing

/// `receipt-worker reconcile`, run as the built binary: the App Store Connect API path end to end through the fake
/// (its JWT checked), a report not ready, a key refused, report files and bad input.
@Suite("Reconciliation: the reconcile command", .serialized, .ownThread)
struct ReconcileCommandTests {
    static let keyID = "CONNECT123"
    static let issuerID = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"
    /// The App Store Connect settings, removed from a child's environment where a test gives none.
    static let connectNames = [
        "APPSTORE_CONNECT_KEY_ID", "APPSTORE_CONNECT_ISSUER_ID", "APPSTORE_CONNECT_PRIVATE_KEY_FILE",
        "APPSTORE_VENDOR_NUMBER", "APPSTORE_CONNECT_API_URL",
    ]

    /// Yesterday in Pacific Time (a day the fake serves: it is over) and its noon, in milliseconds since 1970.
    static func yesterdayPacific() throws -> (day: String, noon: Int64) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "America/Los_Angeles"))
        let today = calendar.startOfDay(for: Date())
        let start = try #require(calendar.date(byAdding: .day, value: -1, to: today))
        let parts = calendar.dateComponents([.year, .month, .day], from: start)
        let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        return (day, Int64(start.timeIntervalSince1970 * 1000) + 12 * 3_600_000)
    }

    /// A harness whose fake App Store knows `key` for the App Store Connect API, and a child's settings for it.
    static func world(key: P256.Signing.PrivateKey = P256.Signing.PrivateKey(), knownKey: Bool = true) throws
        -> (Harness, [String: String])
    {
        var configuration = FakeAppStoreConfiguration()
        if knownKey { configuration.connectAPIKeys = [keyID: key.publicKey] }
        let h = try Harness(fakeConfiguration: configuration)
        let path = NSTemporaryDirectory() + "rw-reconcile-\(UUID().uuidString).p8"
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        let environment = ChildProcess.environment(
            removing: ["APPSTORE_CONNECT_API_URL"],
            setting: [
                "DATABASE_URL": h.databaseURL, "APPSTORE_CONNECT_KEY_ID": keyID, "APPSTORE_CONNECT_ISSUER_ID": issuerID,
                "APPSTORE_CONNECT_PRIVATE_KEY_FILE": path, "APPSTORE_VENDOR_NUMBER": h.fake.salesReports.vendorNumber,
                "APPSTORE_CONNECT_API_URL": h.fake.connectAPIURL,
            ]
        )
        return (h, environment)
    }

    static func run(_ arguments: [String], _ environment: [String: String]) async throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments, environment: environment)
        let status = await child.exit(within: 120)
        return (status, child.output)
    }

    @Test("through the fake's App Store Connect API: a day that agrees is exit 0; each planted kind is found, exit 1")
    func api() async throws {
        let (h, environment) = try Self.world()
        let (day, noon) = try Self.yesterdayPacific()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", purchaseDate: noon),
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", purchaseDate: noon + 60_000),
            FakePurchase(bundleId: "com.example.app", productId: "pro.lifetime", type: "Non-Consumable",
                         purchaseDate: noon, storefront: "DEU", basePrice: 4990),
            FakePurchase(bundleId: "com.example.app", productId: "gems", purchaseDate: noon, storefront: "GBR"),
        ])
        for (index, purchase) in added.enumerated() {
            _ = try h.store.enqueueTransaction(
                signedTransaction: nil, transactionId: purchase.transactionId, orderId: "order-\(index)",
                userId: "user-\(index)", productId: purchase.purchase.productId, bundleId: "com.example.app"
            )
        }
        try h.drain(serverAPI: true)
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_transactions WHERE storefront IS NOT NULL AND price IS NOT NULL") == "4")

        let clean = try await Self.run(["reconcile", "--date", day], environment)
        #expect(clean.status == 0, "\(clean.output)")
        #expect(clean.output.contains("4 ledger rows, 0 differences"), "\(clean.output)")

        try h.fake.salesReports.plant(.omitTransaction(added[2].transactionId))
        try h.fake.salesReports.plant(.extraLine(day: day, line: FakeSalesLine(
            sku: "lost.order", units: 1, customerPrice: "4.99", currency: "USD", countryCode: "US")))
        try h.fake.salesReports.plant(.units(day: day, sku: "coins.100", countryCode: "US", units: 3))
        try h.fake.salesReports.plant(.price(day: day, sku: "gems", countryCode: "GB", customerPrice: "1.49"))
        let found = try await Self.run(["reconcile", "--date", day, "--json"], environment)
        #expect(found.status == 1, "\(found.output)")
        let run = try JSONSerialization.jsonObject(with: Data(found.output.utf8)) as? [String: Any]
        let lines = (run?["lines"] as? [[String: Any]]) ?? []
        let kinds = lines.map { "\($0["kind"] ?? "") \($0["product_id"] ?? "")" }.sorted()
        #expect(kinds == [
            "missing_in_ledger lost.order", "missing_in_report pro.lifetime", "price_mismatch gems",
            "unit_mismatch coins.100",
        ], "\(found.output)")
        #expect(run?["source"] as? String == "api" && run?["differences"] as? Int == 4, "\(found.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations WHERE source = 'api'") == "2")
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_events WHERE kind = 'reconciliation_differences'") == "1")
    }

    @Test("Apple's report not ready yet (404): exit 3, says so, and no run is stored")
    func notReady() async throws {
        let (h, environment) = try Self.world()
        let (day, noon) = try Self.yesterdayPacific()
        _ = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100", purchaseDate: noon)])
        try h.fake.salesReports.hold(day: day)
        let held = try await Self.run(["reconcile", "--date", day], environment)
        #expect(held.status == 3, "\(held.output)")
        #expect(held.output.contains("is not ready yet"), "\(held.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "0")
        h.fake.salesReports.release(day: day)
        let ready = try await Self.run(["reconcile", "--date", day], environment)
        #expect(ready.status == 1, "\(ready.output)")  // the purchase was never credited here: missing_in_ledger
        #expect(ready.output.contains("missing_in_ledger"), "\(ready.output)")
    }

    @Test("a key the App Store Connect API does not know: Apple's 401, exit 1, nothing stored")
    func unknownKey() async throws {
        let (h, environment) = try Self.world(knownKey: false)
        let (day, _) = try Self.yesterdayPacific()
        let refused = try await Self.run(["reconcile", "--date", day], environment)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("was not downloaded"), "\(refused.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "0")
    }

    /// A Summary Sales Report in Apple's columns: `lines` of (sku, product type, units, price, currency, country).
    static func report(day: String, _ lines: [(String, String, Int, String, String, String)]) -> String {
        let apple = appleDay(day)
        let header = SalesReportColumn.allCases.map(\.rawValue).joined(separator: "\t")
        let rows = lines.map { line in
            SalesReportColumn.allCases.map { column -> String in
                switch column {
                case .provider: "APPLE"
                case .providerCountry: "US"
                case .sku: line.0
                case .title: line.0
                case .productTypeIdentifier: line.1
                case .units: String(line.2)
                case .developerProceeds: "0.70"
                case .beginDate, .endDate: apple
                case .customerCurrency, .currencyOfProceeds: line.4
                case .countryCode: line.5
                case .appleIdentifier: "1234567890"
                case .customerPrice: line.3
                case .parentIdentifier: "APP1"
                default: ""
                }
            }.joined(separator: "\t")
        }
        return ([header] + rows).joined(separator: "\n") + "\n"
    }

    /// YYYY-MM-DD as Apple writes it, MM/DD/YYYY.
    static func appleDay(_ day: String) -> String {
        let parts = day.split(separator: "-")
        return "\(parts[1])/\(parts[2])/\(parts[0])"
    }

    static func file(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "rw-report-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("--report: Apple's gzip file, refunds included, compared with the ledger; app lines are left out")
    func reportFile() async throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                product_id, bundle_id, order_id, user_id, purchase_date, price, currency, storefront, revoked_at,
                revocation_reason)
            VALUES ('Production', 'f1', 'f1', 'f1', 'coins.100', 'com.example.app', 'f1', 'u', '2026-11-20 12:00Z',
                    0.99, 'USD', 'USA', NULL, NULL),
                   ('Production', 'f2', 'f2', 'f2', 'coins.100', 'com.example.app', 'f2', 'u', '2026-11-19 12:00Z',
                    0.99, 'USD', 'USA', '2026-11-20 13:00Z', 'refunded')
            """)
        let text = Self.report(day: "2026-11-20", [
            ("coins.100", "IA1", 1, "0.99", "USD", "US"), ("coins.100", "IA1", -1, "-0.99", "USD", "US"),
            ("APP1", "1", 40, "0", "USD", "US"),
        ])
        let gzip = try #require(FakeGzip.compress(Array(text.utf8)))
        let environment = ChildProcess.environment(
            removing: Self.connectNames, setting: ["DATABASE_URL": h.databaseURL]
        )
        let agreed = try await Self.run(["reconcile", "--date", "2026-11-20", "--report", try Self.file(gzip)], environment)
        #expect(agreed.status == 0, "\(agreed.output)")
        #expect(agreed.output.contains("2 Apple in-app lines, 2 ledger rows, 0 differences"), "\(agreed.output)")
        // The same file uncompressed, without the refund line: the ledger's refund is not in Apple's report.
        let plain = Self.report(day: "2026-11-20", [("coins.100", "IA1", 1, "0.99", "USD", "US")])
        let differs = try await Self.run(
            ["reconcile", "--date", "2026-11-20", "--report", try Self.file(Array(plain.utf8))], environment
        )
        #expect(differs.status == 1, "\(differs.output)")
        #expect(differs.output.contains("unit_mismatch  coins.100"), "\(differs.output)")
        #expect(try h.scalar("SELECT string_agg(source, ',' ORDER BY id) FROM receipt_reconciliations") == "file,file")
    }

    @Test("bad input is exit 2 naming it, and nothing is stored: not a report, cut short, another day, a bad date, no key")
    func badInput() async throws {
        let h = try Harness()
        let environment = ChildProcess.environment(
            removing: Self.connectNames, setting: ["DATABASE_URL": h.databaseURL]
        )
        let day = "2026-11-20"
        let good = Array(Self.report(day: day, [("coins.100", "IA1", 1, "0.99", "USD", "US")]).utf8)
        let gzip = try #require(FakeGzip.compress(good))
        let cases: [(arguments: [String], says: String)] = [
            (["--report", try Self.file(Array("<!DOCTYPE html><html><body>Sign in</body></html>".utf8))], "HTML"),
            (["--report", try Self.file(Array("{\"errors\":[]}".utf8))], "JSON"),
            (["--report", try Self.file(Array(gzip.prefix(gzip.count / 2)))], "not a Sales Summary report"),
            (["--report", try Self.file(Array("SKU\tUnits\nx\t1\n".utf8))], "column"),
            (["--report", "/nonexistent/report.txt.gz"], "cannot be opened"),
            (["--report", "/tmp"], "is a directory"),
            // Endless input is refused at the bound, not read until memory runs out.
            (["--report", "/dev/zero"], "holds more than 64 MiB"),
            (["--date", "2026-11-21", "--report", try Self.file(gzip)], "not the daily report of 2026-11-21"),
            (["--date", "2026-13-01", "--report", try Self.file(gzip)], "--date must be a day"),
            ([], "APPSTORE_CONNECT_KEY_ID, APPSTORE_CONNECT_ISSUER_ID, APPSTORE_CONNECT_PRIVATE_KEY_FILE, APPSTORE_VENDOR_NUMBER"),
        ]
        for (arguments, says) in cases {
            let dated = arguments.contains("--date") ? arguments : ["--date", day] + arguments
            let result = try await Self.run(["reconcile"] + dated, environment)
            #expect(result.status == 2, "\(dated): \(result.output)")
            #expect(result.output.contains(says), "\(dated): \(result.output)")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "0")
    }

    @Test("--report: Apple's text is printed escaped, '.99' is 0.99, and a line the database refuses is named by its line in the file")
    func reportText() async throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                product_id, bundle_id, order_id, user_id, purchase_date, price, currency, storefront)
            VALUES ('Production', 't1', 't1', 't1', 'coins.100', 'com.example.app', 't1', 'u', '2026-11-20 12:00Z',
                    0.99, 'USD', 'USA')
            """)
        let environment = ChildProcess.environment(
            removing: Self.connectNames, setting: ["DATABASE_URL": h.databaseURL]
        )
        let hostile = "evil\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}31m"
        let text = Self.report(day: "2026-11-20", [
            ("coins.100", "IA1", 1, ".99", "USD", "US"), (hostile, "IA1", 1, "0.99", "USD", "US"),
        ])
        let result = try await Self.run(
            ["reconcile", "--date", "2026-11-20", "--report", try Self.file(Array(text.utf8))], environment
        )
        #expect(result.status == 1, "\(result.output)")
        #expect(!result.output.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{9B}" },
                "\(result.output.debugDescription)")
        #expect(result.output.contains(#"missing_in_ledger  evil\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m"#),
                "\(result.output.debugDescription)")
        // Apple's ".99" is the ledger's 0.99: coins.100 agrees, only the hostile SKU differs.
        #expect(!result.output.contains("coins.100"), "\(result.output)")

        // An SKU longer than receipt_reconcile() takes, on the file's fourth line (after an app's line): the error
        // names that line of the file, not only the in-app line's number.
        // It is bad input (exit 2), and the line it quotes is printed escaped too.
        let long = Self.report(day: "2026-11-20", [
            ("APP1", "1", 40, "0", "USD", "US"), ("coins.100", "IA1", 1, "0.99", "USD", "US"),
            ("\u{9B}" + String(repeating: "x", count: 300), "IA1", 1, "0.99", "USD", "US"),
        ])
        let refused = try await Self.run(
            ["reconcile", "--date", "2026-11-20", "--report", try Self.file(Array(long.utf8))], environment
        )
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.output.contains("report line 2 (line 4 of the file)"), "\(refused.output)")
        #expect(!refused.output.unicodeScalars.contains("\u{9B}"), "\(refused.output.debugDescription)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "1")
    }
}

#endif
