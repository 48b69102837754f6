import AppStoreClient
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import Testing

@testable import SalesReports

/// The sales report client against the fake App Store over real loopback HTTP: the report downloaded and read, 404
/// while a day is not ready, the fake's token check, Apple's refusals turned into errors that name the setting.
@Suite("Sales report client and the fake's sales reports")
struct SalesReportClientTests {
    static let keyID = "CONNECT123"
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let noSales = "There were no sales for the date specified."

    /// A past day (three days ago in Pacific time), and noon of it in milliseconds.
    static let day: (text: String, noon: Int64) = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = FakeSalesReports.pacific
        let date = calendar.date(byAdding: .day, value: -3, to: Date())!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        let noon = calendar.date(from: DateComponents(year: parts.year, month: parts.month, day: parts.day, hour: 12))!
        let text = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
        return (text, Int64(noon.timeIntervalSince1970 * 1000))
    }()

    struct Fixture {
        var server: FakeAppStoreServer
        var key: P256.Signing.PrivateKey

        func credentials(
            key other: P256.Signing.PrivateKey? = nil, keyID: String = SalesReportClientTests.keyID,
            issuer: String = SalesReportClientTests.issuer, vendor: String? = nil
        ) -> AppStoreConnectCredentials {
            AppStoreConnectCredentials(
                keyID: keyID, issuerID: issuer, privateKeyPEM: (other ?? key).pemRepresentation,
                vendorNumber: vendor ?? server.salesReports.vendorNumber, apiBaseURL: server.connectAPIURL
            )
        }

        func client(_ credentials: AppStoreConnectCredentials? = nil, maxReportBytes: Int = 64 << 20) throws
            -> SalesReportClient
        {
            try SalesReportClient(credentials: credentials ?? self.credentials(), maxReportBytes: maxReportBytes)
        }
    }

    /// A fake that accepts one App Store Connect API key of `issuer`.
    func withFake<T>(_ body: (Fixture) throws -> T) throws -> T {
        let key = P256.Signing.PrivateKey()
        let server = try FakeAppStoreServer.start(
            FakeAppStoreConfiguration(threads: 1, connectAPIKeys: [Self.keyID: key.publicKey], connectIssuerID: Self.issuer)
        )
        defer { server.stop() }
        return try body(Fixture(server: server, key: key))
    }

    static func purchase(
        _ product: String, storefront: String = "USA", basePrice: Int64 = 990, at date: Int64 = day.noon,
        environment: String = "Production", type: String = "Consumable", quantity: Int = 1
    ) -> FakePurchase {
        FakePurchase(
            environment: environment, bundleId: "com.example.app", productId: product, type: type, quantity: quantity,
            purchaseDate: date, storefront: storefront, basePrice: basePrice
        )
    }

    static func report(_ fetch: SalesReportFetch) throws -> SalesReport {
        guard case .report(let bytes) = fetch else {
            Issue.record("expected a report, got \(fetch)")
            return SalesReport(lines: [])
        }
        #expect(bytes.starts(with: [0x1F, 0x8B]), "Apple serves the report gzip-compressed")
        return try SalesReport.parse(bytes)
    }

    @Test("the day's report is built from the fake's Production purchases, refunds as negative lines, and read")
    func reportFetchedAndParsed() throws {
        try withFake { fake in
            let day = Self.day
            let added = try fake.server.purchases.add([
                Self.purchase("coins.100"), Self.purchase("coins.100"), Self.purchase("coins.100", quantity: 3),
                Self.purchase("coins.100", storefront: "GBR"), Self.purchase("coins.100", storefront: "JPN"),
                Self.purchase("pro.monthly", type: "Auto-Renewable Subscription"),
                Self.purchase("coins.100", environment: "Sandbox"),
                Self.purchase("coins.100", at: day.noon + 86_400_000),
            ])
            let anHourLater = Date(timeIntervalSince1970: Double(day.noon + 3_600_000) / 1000)
            try fake.server.purchases.refund(transactionId: added[0].transactionId, signedDate: anHourLater)

            let report = try Self.report(try fake.client().fetchDailySummary(reportDate: day.text))
            let lines = report.inAppLines.map {
                "\($0.sku) \($0.productTypeIdentifier) \($0.countryCode) \($0.customerCurrency) \($0.customerPrice) \($0.units)"
            }
            #expect(lines.sorted() == [
                "coins.100 IA1 GB GBP 0.79 1",
                "coins.100 IA1 JP JPY 149 1",
                "coins.100 IA1 US USD -0.99 -1",
                "coins.100 IA1 US USD 0.99 5",
                "pro.monthly IAY US USD 0.99 1",
            ])
            let parts = day.text.split(separator: "-")
            #expect(report.lines.allSatisfy { $0.beginDate == "\(parts[1])/\(parts[2])/\(parts[0])" })
            #expect(report.lines.first { $0.units < 0 }?.developerProceeds == "0.69")
        }
    }

    @Test("404 while a day is held, not over, or without sales: notReady with Apple's words, no report")
    func notReady() throws {
        try withFake { fake in
            let client = try fake.client()
            #expect(try client.fetchDailySummary(reportDate: Self.day.text) == .notReady(Self.noSales))
            try fake.server.purchases.add([Self.purchase("coins.100")])
            try fake.server.salesReports.hold(day: Self.day.text)
            guard case .notReady(let why) = try client.fetchDailySummary(reportDate: Self.day.text) else {
                Issue.record("a held day must not be served")
                return
            }
            #expect(why.contains("not available yet"))
            fake.server.salesReports.release(day: Self.day.text)
            #expect(try Self.report(try client.fetchDailySummary(reportDate: Self.day.text)).lines.count == 1)
            guard case .notReady = try client.fetchDailySummary(reportDate: "2099-01-01") else {
                Issue.record("a day not over must not be served")
                return
            }
        }
    }

    @Test("planted differences: an extra sale, an omitted purchase, other units, another price, another SKU")
    func plantedDifferences() throws {
        try withFake { fake in
            let added = try fake.server.purchases.add([
                Self.purchase("coins.100"), Self.purchase("gems.10", storefront: "DEU"), Self.purchase("pro.year"),
                Self.purchase("hat", storefront: "GBR"),
            ])
            let reports = fake.server.salesReports
            try reports.plant(.omitTransaction(added[1].transactionId))
            try reports.plant(.extraLine(day: Self.day.text, line: FakeSalesLine(
                sku: "lost.order", units: 1, customerPrice: "4.99", currency: "USD", countryCode: "US"
            )))
            try reports.plant(.units(day: Self.day.text, sku: "coins.100", countryCode: "US", units: 2))
            try reports.plant(.price(day: Self.day.text, sku: "PRO_YEAR", countryCode: "US", customerPrice: "1.49"))
            try reports.setSKU("PRO_YEAR", forProduct: "pro.year")
            let report = try Self.report(try fake.client().fetchDailySummary(reportDate: Self.day.text))
            let lines = report.inAppLines.map { "\($0.sku) \($0.countryCode) \($0.customerPrice) \($0.units)" }
            #expect(lines.sorted() == [
                "PRO_YEAR US 1.49 1", "coins.100 US 0.99 2", "hat GB 0.79 1", "lost.order US 4.99 1",
            ])
            #expect(throws: FakeAppStoreError.self) {
                try reports.plant(.extraLine(day: Self.day.text, line: FakeSalesLine(
                    sku: "tab\there", units: 1, customerPrice: "1", currency: "USD", countryCode: "US"
                )))
            }
            for day in ["2026-02-30", "2026-13-01", "2026-00-10", "26-11-2026", "2026-11-1"] {
                #expect(throws: FakeAppStoreError.self) { try reports.hold(day: day) }
            }
        }
    }

    @Test("another key, issuer or vendor number: 401 or 403, the error names the settings to fix")
    func refusals() throws {
        try withFake { fake in
            for credentials in [
                fake.credentials(key: P256.Signing.PrivateKey()), fake.credentials(keyID: "OTHERKEY12"),
                fake.credentials(issuer: "another-issuer"),
            ] {
                let error = try #require(throws: SalesReportFetchError.self) {
                    try fake.client(credentials).fetchDailySummary(reportDate: Self.day.text)
                }
                #expect(error.kind == .unauthorized)
                #expect(error.status == 401)
                let settings = ["APPSTORE_CONNECT_KEY_ID", "APPSTORE_CONNECT_ISSUER_ID", "APPSTORE_CONNECT_PRIVATE_KEY_FILE"]
                for setting in settings {
                    #expect(error.message.contains(setting))
                }
                #expect(error.message.contains("NOT_AUTHORIZED"))
            }
            let forbidden = try #require(throws: SalesReportFetchError.self) {
                try fake.client(fake.credentials(vendor: "99999999")).fetchDailySummary(reportDate: Self.day.text)
            }
            #expect(forbidden.kind == .forbidden)
            #expect(forbidden.message.contains("APPSTORE_VENDOR_NUMBER"))
        }
    }

    @Test("POST /fake/sales-reports holds days and plants differences from another process")
    func adminRoute() throws {
        try withFake { fake in
            let transport = try CurlMultiTransport()
            defer { transport.shutdown() }
            let post = { (json: String) throws -> Int in
                try transport.send(HTTPRequest(
                    url: fake.server.baseURL + "/fake/sales-reports", body: Array(json.utf8),
                    headers: ["Content-Type: application/json"]
                )).get().status
            }
            let day = Self.day.text
            let line = #"{"sku": "lost.order", "title": "Lost", "productType": "IAY", "units": 2, "#
                + #""customerPrice": "9.99", "#
                + #""developerProceeds": "6.99", "currency": "EUR", "countryCode": "DE", "parentIdentifier": "APP"}"#
            let plant = #"{"hold": ["\#(day)"], "plant": [{"extraLine": {"day": "\#(day)", "line": \#(line)}}]}"#
            #expect(try post(plant) == 200)
            let client = try fake.client()
            guard case .notReady = try client.fetchDailySummary(reportDate: day) else {
                Issue.record("the held day was served")
                return
            }
            #expect(try post(#"{"release": ["\#(day)"]}"#) == 200)
            let lines = try Self.report(try client.fetchDailySummary(reportDate: day)).inAppLines
            #expect(lines.map { "\($0.sku) \($0.productTypeIdentifier) \($0.countryCode) \($0.customerPrice) \($0.units)" }
                == ["lost.order IAY DE 9.99 2"])
            #expect(try post(#"{"hold": ["yesterday"]}"#) == 400)
            #expect(try post(#"{"reset": true}"#) == 200)
            #expect(try client.fetchDailySummary(reportDate: day) == .notReady(Self.noSales))
        }
    }

    /// Sends `token` as the client would, and returns the fake's answer and its reason header.
    static func send(token: String, to fake: Fixture) throws -> (Int, String?) {
        let transport = try CurlMultiTransport()
        defer { transport.shutdown() }
        let client = try fake.client()
        let request = HTTPRequest(
            url: client.url(reportDate: day.text), method: .get, headers: ["Authorization: Bearer \(token)"]
        )
        let response = try transport.send(request).get()
        return (response.status, response.header("X-Fake-AppStore-Reason"))
    }

    @Test("the fake checks the token: signature, key id, issuer, audience, expiry, a lifetime of 20 minutes at most")
    func fakeTokenCheck() throws {
        try withFake { fake in
            let key = try ServerAPIPrivateKey(pemRepresentation: fake.key.pemRepresentation)
            let now = Int(Date().timeIntervalSince1970)
            let sign = { (keyID: String, issuer: String, issued: Int, expires: Int, bid: String?) in
                try AppStoreConnectJWT.sign(
                    keyID: keyID, issuerID: issuer, issuedAt: issued, expires: expires, bundleID: bid, key: key
                )
            }
            #expect(try Self.send(token: sign(Self.keyID, Self.issuer, now, now + 1200, nil), to: fake).0 == 404)
            let refused: [(String, String)] = [
                (try sign(Self.keyID, Self.issuer, now, now + 1260, nil), "at most 20 minutes"),
                (try sign(Self.keyID, Self.issuer, now - 1200, now - 10, nil), "expired"),
                (try sign(Self.keyID, "someone-else", now, now + 600, nil), "iss must be"),
                (try sign("OTHERKEY12", Self.issuer, now, now + 600, nil), "unknown key id"),
                ("not.a.jwt", "not a JWT"),
            ]
            for (token, reason) in refused {
                let (status, said) = try Self.send(token: token, to: fake)
                #expect(status == 401, "\(reason)")
                #expect(said?.contains(reason) == true, "\(said ?? "no reason") should say \(reason)")
            }
            let otherKey = try ServerAPIPrivateKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation)
            let forged = try AppStoreConnectJWT.sign(
                keyID: Self.keyID, issuerID: Self.issuer, issuedAt: now, expires: now + 600, bundleID: nil, key: otherKey
            )
            #expect(try Self.send(token: forged, to: fake).1?.contains("does not verify") == true)
        }
    }

    @Test("settings: https only (plain http to loopback), ids present, vendor digits, a PKCS #8 P-256 key")
    func settings() throws {
        let key = P256.Signing.PrivateKey().pemRepresentation
        let good = AppStoreConnectCredentials(keyID: "K", issuerID: "I", privateKeyPEM: key, vendorNumber: "80012345")
        #expect(throws: Never.self) { try good.validate() }
        let cases: [(AppStoreConnectCredentials, String)] = [
            (with(good) { $0.apiBaseURL = "http://api.appstoreconnect.apple.com" }, "APPSTORE_CONNECT_API_URL uses plain"),
            (with(good) { $0.apiBaseURL = "http://10.0.0.1:8080" }, "APPSTORE_CONNECT_API_URL uses plain http"),
            (with(good) { $0.apiBaseURL = "ftp://example.com" }, "APPSTORE_CONNECT_API_URL must be an https URL"),
            (with(good) { $0.keyID = "" }, "APPSTORE_CONNECT_KEY_ID is empty"),
            (with(good) { $0.issuerID = "" }, "APPSTORE_CONNECT_ISSUER_ID is empty"),
            (with(good) { $0.vendorNumber = "8001 2345" }, "APPSTORE_VENDOR_NUMBER must be your vendor number"),
            (with(good) { $0.privateKeyPEM = "hello" }, "APPSTORE_CONNECT_PRIVATE_KEY_FILE ((in memory)) is not a PEM"),
        ]
        for (credentials, message) in cases {
            let error = try #require(throws: SalesReportFetchError.self) { try SalesReportClient(credentials: credentials) }
            #expect(error.kind == .configuration)
            #expect(error.message.contains(message), "\(error.message)")
        }
        #expect(throws: Never.self) { try with(good) { $0.apiBaseURL = "http://127.0.0.1:9" }.validate() }
        #expect(!"\(good)".contains("PRIVATE KEY"))
        let client = try SalesReportClient(credentials: good)
        for bad in ["2026-02-30", "2026-13-01", "20261101", "2026-1-01", ""] {
            let error = try #require(throws: SalesReportFetchError.self) { try client.fetchDailySummary(reportDate: bad) }
            #expect(error.kind == .configuration)
        }
        #expect(client.url(reportDate: "2026-11-24") == "https://api.appstoreconnect.apple.com/v1/salesReports?"
            + "filter%5Bfrequency%5D=DAILY&filter%5BreportDate%5D=2026-11-24&filter%5BreportSubType%5D=SUMMARY&"
            + "filter%5BreportType%5D=SALES&filter%5BvendorNumber%5D=80012345&filter%5Bversion%5D=1_0")
    }

    @Test("answers that are not Apple's: HTML, a 404 of another server, outages, a report past the bound")
    func otherAnswers() throws {
        let html = Array("<html><body>Gateway</body></html>".utf8)
        let htmlHeaders = [(name: "Content-Type", value: "text/html")]
        let cases: [(HTTPResponse, SalesReportFetchError.Kind, String)] = [
            (HTTPResponse(status: 200, body: html, headers: htmlHeaders), .unexpectedAnswer, "answered 200 with text/html"),
            (HTTPResponse(status: 404, body: html, headers: htmlHeaders), .unexpectedAnswer, "APPSTORE_CONNECT_API_URL"),
            (HTTPResponse(status: 503, body: html), .unavailable, "unavailable (503)"),
            (HTTPResponse(status: 429, body: []), .rateLimited, "429"),
            (
                HTTPResponse(status: 400, body: Array(#"{"errors":[{"code":"PARAMETER_ERROR.INVALID","detail":"bad"}]}"#.utf8)),
                .badRequest, "PARAMETER_ERROR.INVALID: bad"
            ),
            (HTTPResponse(status: 302, body: []), .unexpectedAnswer, "answered 302"),
        ]
        for (response, kind, words) in cases {
            let error = try #require(throws: SalesReportFetchError.self) {
                try SalesReportClient.interpret(response, maxReportBytes: 1 << 20)
            }
            #expect(error.kind == kind)
            #expect(error.message.contains(words), "\(error.message)")
        }
        let escape = HTTPResponse(status: 404, body: Array(#"{"errors":[{"detail":"\u001b[2Jgone"}]}"#.utf8))
        #expect(try SalesReportClient.interpret(escape, maxReportBytes: 1) == .notReady(#"\u{1b}[2Jgone"#))

        try withFake { fake in
            try fake.server.purchases.add((0..<200).map { Self.purchase("product.\($0)") })
            let error = try #require(throws: SalesReportFetchError.self) {
                try fake.client(maxReportBytes: 512).fetchDailySummary(reportDate: Self.day.text)
            }
            #expect(error.kind == .tooLarge)
        }
    }
}

private func with<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var value = value
    change(&value)
    return value
}
