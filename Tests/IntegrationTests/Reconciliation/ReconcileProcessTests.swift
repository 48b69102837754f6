#if os(Linux)
import Crypto
import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// Reconciliation as deployed: `work` processes with RECONCILE_AT through the fake's App Store Connect API, and the
/// grants of deploy/sql/roles.sql (operators and workers reconcile, the API layer sees nothing of it).
@Suite("Reconciliation: work processes and roles", .serialized, .ownThread)
struct ReconcileProcessTests {
    @Test("two work processes with RECONCILE_AT: yesterday's report downloaded and compared once, an event for it")
    func twoWorkers() async throws {
        let key = P256.Signing.PrivateKey()
        var configuration = FakeAppStoreConfiguration()
        configuration.connectAPIKeys = [ReconcileCommandTests.keyID: key.publicKey]
        let world = try ProcessWorld(fake: configuration)
        let fake = try world.fakeServer
        let (day, noon) = try ReconcileCommandTests.yesterdayPacific()
        // Sold by Apple yesterday, never credited here: missing_in_ledger.
        _ = try fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100", purchaseDate: noon)])
        let path = NSTemporaryDirectory() + "rw-reconcile-work-\(UUID().uuidString).p8"
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        let settings = [
            "RECONCILE_AT": "00:00", "APPSTORE_CONNECT_KEY_ID": ReconcileCommandTests.keyID,
            "APPSTORE_CONNECT_ISSUER_ID": ReconcileCommandTests.issuerID, "APPSTORE_CONNECT_PRIVATE_KEY_FILE": path,
            "APPSTORE_VENDOR_NUMBER": fake.salesReports.vendorNumber, "APPSTORE_CONNECT_API_URL": fake.connectAPIURL,
        ]
        let first = try world.startWorker(settings)
        let second = try world.startWorker(settings)
        let done = try await world.waitUntil(60) {
            try world.query("SELECT state FROM receipt_reconciliation_schedule WHERE report_date = $1::date", [day])
                .rows.first?.first == "done"
        }
        #expect(done, "\(first.output)\n\(second.output)")
        // Both workers checked (5 s after start); another check would come a minute later.
        try await Task.sleep(for: .seconds(2))
        #expect(try world.query("SELECT report_date::text, source, differences FROM receipt_reconciliations").rows
            == [[day, "api", "1"]])
        #expect(try world.query("SELECT kind FROM receipt_reconciliation_lines").rows == [["missing_in_ledger"]])
        #expect(try world.query(
            "SELECT count(*) FROM receipt_events WHERE kind = 'reconciliation_differences'").rows == [["1"]])
        let warned = first.output.contains("reconciliation found differences")
            || second.output.contains("reconciliation found differences")
        #expect(warned, "\(first.output)\n\(second.output)")
    }

    @Test("work with RECONCILE_AT but no App Store Connect key: exit 2 naming the settings; a bad time: exit 2")
    func workSettings() async throws {
        let world = try ProcessWorld()
        let missing = try world.startWorker(["RECONCILE_AT": "09:00"])
        #expect(missing.wait(timeout: 60) == 2, "\(missing.output)")
        #expect(missing.output.contains("RECONCILE_AT needs an App Store Connect API key"), "\(missing.output)")
        let bad = try world.startWorker(["RECONCILE_AT": "9am"])
        #expect(bad.wait(timeout: 60) == 2, "\(bad.output)")
        #expect(bad.output.contains("RECONCILE_AT must be a time of day HH:MM"), "\(bad.output)")
    }

    @Test("roles.sql: an operator and a worker reconcile and read the runs; the API layer may do neither")
    func roles() async throws {
        let world = try RolesTests.worldWithRoles()
        _ = try world.query("""
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                product_id, bundle_id, order_id, user_id, purchase_date, price, currency, storefront)
            VALUES ('Production', 'r1', 'r1', 'r1', 'coins.100', 'com.example.app', 'r1', 'u', '2026-11-20 12:00Z',
                    0.99, 'USD', 'USA')
            """)
        let lines = #"[{"sku": "coins.100", "country": "US", "currency": "USD", "price": "0.99", "units": 2}]"#
        let call = "SELECT differences FROM receipt_reconcile('2026-11-20', 'file', $1::jsonb)"

        let operatorDB = try PostgresConnection(RolesTests.url(world, as: "operator_login"))
        defer { operatorDB.close() }
        #expect(try operatorDB.query(call, [lines]).rows == [["1"]])
        #expect(try operatorDB.query("SELECT kind, run_by FROM receipt_reconciliation_lines l "
                                     + "JOIN receipt_reconciliations r ON r.id = l.run_id").rows
            == [["unit_mismatch", "operator_login"]])
        // The function reads the ledger for them: operators read only the columns `explain` shows (not the price's
        // circumstances the function compares, such as storefront), nor write runs of their own.
        Self.expectDenied { _ = try operatorDB.query("SELECT storefront FROM receipt_transactions") }
        Self.expectDenied {
            _ = try operatorDB.query("DELETE FROM receipt_reconciliations")
        }

        // The command, as an operator's login, with a report file.
        let report = ReconcileCommandTests.report(day: "2026-11-20", [("coins.100", "IA1", 1, "0.99", "USD", "US")])
        let command = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", try ReconcileCommandTests.file(Array(report.utf8))],
            ChildProcess.environment(
                removing: ReconcileCommandTests.connectNames,
                setting: ["DATABASE_URL": RolesTests.url(world, as: "operator_login")]
            )
        )
        #expect(command.status == 0, "\(command.output)")
        #expect(command.output.contains("1 Apple in-app lines, 1 ledger rows, 0 differences"), "\(command.output)")

        let workerDB = try PostgresConnection(RolesTests.url(world, as: "worker_login"))
        defer { workerDB.close() }
        #expect(try workerDB.query(call, [lines]).rows == [["1"]])
        let claimed = try workerDB.query("SELECT receipt_reconciliation_claim('00:00', 'w1', 60, 3)::text AS day")
        let day = try #require(claimed.rows.first?.first ?? nil)
        #expect(try workerDB.query(
            "SELECT receipt_reconciliation_finish($1::date, 'w1', NULL, 'report not ready', 60)", [day]).rows == [["t"]])
        #expect(try workerDB.query("SELECT state FROM receipt_reconciliation_schedule").rows == [["waiting"]])

        let apiDB = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { apiDB.close() }
        Self.expectDenied { _ = try apiDB.query(call, [lines]) }
        Self.expectDenied { _ = try apiDB.query("SELECT count(*) FROM receipt_reconciliations") }
        Self.expectDenied { _ = try apiDB.query("SELECT count(*) FROM receipt_reconciliation_lines") }
    }

    static func expectDenied(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("allowed, expected permission denied", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501", "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }
}
#endif
