import AppStoreClient
import ArgumentParser
import ConsoleOutput
import FakeAppStore
import Foundation
import Logging
import ThreadSupport

struct FakeAppStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-appstore",
        abstract: "Serve a stand-in for Apple's verifyReceipt, with latency and faults, until SIGTERM/SIGINT.",
        discussion: """
            Endpoints: POST /verifyReceipt (production), POST /sandbox/verifyReceipt (sandbox), GET /stats \
            (answers counted per endpoint, as JSON). Point a worker at it with APPLE_PRODUCTION_URL and \
            APPLE_SANDBOX_URL.

            Real app receipts (base64 PKCS #7) are answered with the purchases they hold. A scenario receipt is \
            the base64 of a JSON object with "fake_appstore_scenario": 1, answered with exactly what it lists:

              {"fake_appstore_scenario": 1, "environment": "Sandbox",
               "bundle_id": "com.example.app",
               "in_app": [{"product_id": "coins.100", "transaction_id": "1001",
                           "purchase_date_ms": "1700000000000"}],
               "faults": ["21005", "html503"], "nonce": "order-42"}

            "environment" is Production or Sandbox: a sandbox receipt sent to production gets 21007, a production \
            receipt sent to the sandbox gets 21008, as with Apple. "faults" answer the first requests that carry \
            the receipt, in order: 21005, 21009, 21199, 21100, 21002, 21004, html503 (HTTP 503), truncated (broken \
            JSON), reset (TCP reset), hang, refused (HTTP/2: the stream refused, so the client may send it again; \
            HTTP/1.1: a reset). Optional: "latest_receipt_info", "status" (a forced final status), \
            "nonce" (makes equal receipts distinct).

            The shared secret comes from FAKE_APPSTORE_SHARED_SECRET or APPLE_SHARED_SECRET (environment only): \
            a request with another password gets 21004. When neither is set, any password is accepted.

            The App Store Server API on the same port: production at /inApps/... (APPSTORE_API_URL=http://HOST:PORT), \
            the sandbox at /sandbox/inApps/... (APPSTORE_SANDBOX_API_URL=http://HOST:PORT/sandbox): Get Transaction \
            Info, Get Transaction History v2 (--api-page-size transactions a page), Look Up Order ID, Get \
            Notification History, Request a Test Notification (the TEST notification sent to --notification-url; \
            4040007 without one) and Get Test Notification Status, Get App Transaction Info (for app transactions \
            the tests sign). Tokens are checked against the public half of the key in \
            APPSTORE_PRIVATE_KEY_FILE, with APPSTORE_KEY_ID as its key id (environment only; without them every \
            request gets 401). Transactions and notifications are signed with a chain made at start; its root \
            certificate is written to --root-certificate-file (printed on start) for APPSTORE_ROOT_CERTIFICATES.

            Purchases are added with POST /fake/transactions {"purchases": [{"bundleId": "com.example.app", \
            "productId": "coins.100", "environment": "Sandbox", "orderId": "MK5TTTVWJH"}]}, answered with each \
            purchase's ids and signed transaction (JWS). Also: GET /fake/root-certificate, POST /fake/api-faults \
            {"faults": ["429:1500", "5000001", "html503", "truncated", "slow:800"]} (the next requests, in order), \
            GET /fake/api-stats.

            App Store Server Notifications V2: POST /fake/notifications makes a notification and sends it as Apple \
            does (POST {"signedPayload": "…"}) to --notification-url, or to its "url": \
            {"event": "refund", "transactionId": "…"} (also "reverse_refund", "renew" and "expire" with \
            "originalTransactionId"), {"notificationType": "CONSUMPTION_REQUEST", "transactionId": "…"} (any type, \
            about the transaction as it stands), or {"duplicateOf": "<notificationUUID>"} (the same signedPayload \
            again). Options: "signedDate" (milliseconds; older for out-of-order delivery), "forged": true (signed \
            by an untrusted chain), "deliver": false (record only). Answered with {"signedPayload", \
            "notificationUUID", "delivered", "sendAttemptResult"}; Get Notification History reports the attempts.

            HTTP/1.1 and HTTP/2 on the same port: HTTP/2 with prior knowledge (h2c) in plain text, which the worker \
            speaks to loopback hosts, or chosen through ALPN with --tls (--http1-only offers HTTP/1.1 alone). With \
            --tls the port serves TLS only, with a certificate for localhost, 127.0.0.1 and ::1 made at start by a \
            certificate authority made at start; the authority's certificate is written to --tls-ca-file (printed \
            on start) for the worker's APPSTORE_CA_FILE.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"
    @Option(help: "The port to listen on; 0 picks a free one (printed on start).")
    var port = 8090
    @Option(help: "Event loop threads. Default: one per core.")
    var threads: Int?
    @Option(name: .customLong("latency-ms"), help: "Delay before every answer, in milliseconds.")
    var latencyMilliseconds = 0
    @Option(name: .customLong("jitter-ms"), help: "Random extra delay, 0…N milliseconds, added to the latency.")
    var jitterMilliseconds = 0
    @Option(help: "How long a hang fault holds a request before closing the connection.")
    var hangSeconds = 120

    @Option(name: .customLong("rate-21005"), help: "Share of requests answered 21005, server unavailable (0…1).")
    var rate21005 = 0.0
    @Option(name: .customLong("rate-21009"), help: "Share answered 21009, internal data access error.")
    var rate21009 = 0.0
    @Option(name: .customLong("rate-21199"), help: "Share answered 21199 with is_retryable.")
    var rate21199 = 0.0
    @Option(name: .customLong("rate-html-503"), help: "Share answered HTTP 503 with an HTML page.")
    var rateHTML503 = 0.0
    @Option(name: .customLong("rate-truncated"), help: "Share answered HTTP 200 with half the JSON.")
    var rateTruncated = 0.0
    @Option(name: .customLong("rate-reset"), help: "Share whose connection is reset without an answer.")
    var rateReset = 0.0
    @Option(name: .customLong("rate-hang"), help: "Share not answered for --hang-seconds.")
    var rateHang = 0.0
    @Option(name: .customLong("rate-21004"), help: "Share answered 21004, as if the shared secret were wrong.")
    var rate21004 = 0.0

    @Option(help: "Where to write the signing chain's root certificate (DER). Default: in the temporary directory.")
    var rootCertificateFile: String?
    @Option(name: .customLong("api-page-size"), help: "Transactions or notifications per App Store Server API page.")
    var apiPageSize = 2
    @Option(name: .customLong("api-rate-limit"), help: "Requests a second per app and endpoint before 429 (Apple: 50).")
    var apiRateLimit: Int?
    @Option(name: .customLong("api-rate-429"), help: "Share of App Store Server API requests answered 429 (0…1).")
    var apiRate429 = 0.0
    @Option(name: .customLong("api-rate-5000001"), help: "Share answered 500 with error 5000001.")
    var apiRate5000001 = 0.0
    @Option(
        name: .customLong("notification-url"),
        help: "Where POST /fake/notifications sends App Store Server Notifications V2 (http:// or https://)."
    )
    var notificationURL: String?

    @Flag(help: "Serve TLS (https://) with a certificate made at start (see --tls-ca-file).")
    var tls = false
    @Option(help: "With --tls: where to write the certificate authority's certificate (PEM). Default: in the temporary directory.")
    var tlsCAFile: String?
    @Flag(name: .customLong("http1-only"), help: "Serve HTTP/1.1 only: no HTTP/2, neither with prior knowledge nor through ALPN.")
    var http1Only = false
    @Option(help: "Requests one HTTP/2 connection may carry at once (SETTINGS_MAX_CONCURRENT_STREAMS).")
    var maxConcurrentStreams = 1_000

    @OptionGroup var logging: LoggingOptions

    var faultRates: FaultRates {
        FaultRates(
            status21005: rate21005, status21009: rate21009, status21199Retryable: rate21199, html503: rateHTML503,
            truncatedJSON: rateTruncated, connectionReset: rateReset, hang: rateHang, wrongSecret21004: rate21004
        )
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0…65535") }
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1") }
        guard latencyMilliseconds >= 0, jitterMilliseconds >= 0, hangSeconds >= 0 else {
            throw ValidationError("--latency-ms, --jitter-ms and --hang-seconds must not be negative")
        }
        let rates = [
            ("21005", rate21005), ("21009", rate21009), ("21199", rate21199), ("html-503", rateHTML503),
            ("truncated", rateTruncated), ("reset", rateReset), ("hang", rateHang), ("21004", rate21004),
        ]
        for (name, rate) in rates where !(0...1).contains(rate) {
            throw ValidationError("--rate-\(name) must be between 0 and 1, got \(rate)")
        }
        let total = rates.map(\.1).reduce(0, +)
        guard total <= 1 + 1e-9 else {
            throw ValidationError("the fault rates add up to \(total); together they must not exceed 1")
        }
        guard apiPageSize >= 1, (apiRateLimit ?? 1) >= 1 else {
            throw ValidationError("--api-page-size and --api-rate-limit must be at least 1")
        }
        guard (0...1).contains(apiRate429), (0...1).contains(apiRate5000001), apiRate429 + apiRate5000001 <= 1 else {
            throw ValidationError("--api-rate-429 and --api-rate-5000001 must be between 0 and 1, together at most 1")
        }
        if let notificationURL, !notificationURL.hasPrefix("http://"), !notificationURL.hasPrefix("https://") {
            throw ValidationError("--notification-url must start with http:// or https://")
        }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be at least 1") }
        if tlsCAFile != nil && !tls { throw ValidationError("--tls-ca-file needs --tls") }
    }

    func run() throws {
        let settings = Settings()
        try logging.bootstrap(settings)
        let secretVariable = ["FAKE_APPSTORE_SHARED_SECRET", "APPLE_SHARED_SECRET"].first { name in
            settings.environment[name]?.isEmpty == false
        }

        var configuration = FakeAppStoreConfiguration(
            host: host, port: port, sharedSecret: secretVariable.flatMap { settings.environment[$0] },
            latencyMilliseconds: latencyMilliseconds, jitterMilliseconds: jitterMilliseconds, faults: faultRates,
            hangSeconds: hangSeconds, logger: Logger(label: "fake-appstore")
        )
        if let threads { configuration.threads = threads }
        configuration.rootCertificatePath = rootCertificateFile
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("fake-appstore-root-\(ProcessInfo.processInfo.processIdentifier).der").path
        configuration.apiPageSize = apiPageSize
        configuration.apiRateLimit = apiRateLimit
        configuration.apiFaults = ServerAPIFaultRates(rateLimited: apiRate429, internalRetryable: apiRate5000001)
        configuration.notificationURL = notificationURL
        configuration.http2 = !http1Only
        configuration.http2MaxConcurrentStreams = maxConcurrentStreams
        if tls {
            configuration.tls = FakeAppStoreTLS(
                authorityCertificatePath: tlsCAFile ?? FileManager.default.temporaryDirectory
                    .appendingPathComponent("fake-appstore-ca-\(ProcessInfo.processInfo.processIdentifier).pem").path
            )
        }
        let apiKey = try apiKey(settings)
        if let apiKey { configuration.apiKeys = [apiKey.id: apiKey.key.publicKey] }
        let connectKey = try connectKey(settings)
        if let connectKey {
            configuration.connectAPIKeys = [connectKey.id: connectKey.key.publicKey]
            let issuer = settings.environment["APPSTORE_CONNECT_ISSUER_ID"] ?? ""
            configuration.connectIssuerID = issuer.isEmpty ? nil : issuer
        }
        if let vendor = settings.environment["APPSTORE_VENDOR_NUMBER"], !vendor.isEmpty {
            configuration.vendorNumber = vendor
        }

        let stopRequested = ConditionLock(false)
        let signals = try SignalHandlers([SIGTERM, SIGINT]) { _ in stopRequested.withLock { $0 = true } }
        defer { signals.cancel() }

        let server: FakeAppStoreServer
        do {
            server = try FakeAppStoreServer.start(configuration)
        } catch {
            throw CommandFailure("the fake App Store could not start: \(error)")
        }

        print(
            "fake App Store listening: production \(server.productionURL) sandbox \(server.sandboxURL) "
                + "stats \(server.baseURL)/stats" + (server.tlsAuthorityPath.map { " ca-file \($0)" } ?? "")
        )
        flushStandardOutput()
        print(
            "App Store Server API: production \(server.apiProductionURL) sandbox \(server.apiSandboxURL) "
                + "root certificate \(server.rootCertificatePath ?? "-")"
        )
        flushStandardOutput()
        note(
            apiKey.map { "App Store Server API tokens: checked against key \($0.id) (APPSTORE_PRIVATE_KEY_FILE)" }
                ?? "App Store Server API tokens: none accepted (set APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE)"
        )
        note(
            connectKey.map {
                "sales reports: \(server.connectAPIURL)/v1/salesReports (APPSTORE_CONNECT_API_URL), tokens checked "
                    + "against key \($0.id) (APPSTORE_CONNECT_PRIVATE_KEY_FILE), vendor "
                    + "\(server.salesReports.vendorNumber); POST /fake/sales-reports holds days and plants differences"
            } ?? "sales reports: no token accepted (set APPSTORE_CONNECT_KEY_ID and APPSTORE_CONNECT_PRIVATE_KEY_FILE)"
        )
        note(
            notificationURL.map { "notifications: POST /fake/notifications sends them to \($0)" }
                ?? "notifications: sent only where POST /fake/notifications names a url (set --notification-url)"
        )
        note(
            "HTTP: \(http1Only ? "HTTP/1.1 only" : "HTTP/1.1 and HTTP/2 (\(maxConcurrentStreams) streams a connection)")"
                + (server.tlsAuthorityPath.map { ", TLS; trust \($0) with APPSTORE_CA_FILE" } ?? ", plain text")
        )
        note(
            secretVariable.map { "shared secret: checked against \($0)" }
                ?? "shared secret: any password accepted (set FAKE_APPSTORE_SHARED_SECRET to check it)"
        )

        stopRequested.wait(until: { $0 })
        server.stop()
        let stats = server.stats()
        note(
            "fake App Store stopped after \(stats.total) answers (production \(stats.requests["production"] ?? 0), "
                + "sandbox \(stats.requests["sandbox"] ?? 0))"
        )
    }

    /// The key whose tokens the fake accepts: APPSTORE_KEY_ID and the public half of APPSTORE_PRIVATE_KEY_FILE, when
    /// both are set.
    private func apiKey(_ settings: Settings) throws -> (id: String, key: ServerAPIPrivateKey)? {
        guard let id = settings.environment["APPSTORE_KEY_ID"], !id.isEmpty,
            let path = settings.environment["APPSTORE_PRIVATE_KEY_FILE"], !path.isEmpty
        else { return nil }
        do {
            return (id, try ServerAPIPrivateKey(contentsOfFile: path))
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    /// The App Store Connect API key whose tokens the fake's sales reports accept: APPSTORE_CONNECT_KEY_ID and the
    /// public half of APPSTORE_CONNECT_PRIVATE_KEY_FILE, when both are set.
    private func connectKey(_ settings: Settings) throws -> (id: String, key: ServerAPIPrivateKey)? {
        guard let id = settings.environment["APPSTORE_CONNECT_KEY_ID"], !id.isEmpty,
            let path = settings.environment["APPSTORE_CONNECT_PRIVATE_KEY_FILE"], !path.isEmpty
        else { return nil }
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CommandFailure("APPSTORE_CONNECT_PRIVATE_KEY_FILE names \(path), which cannot be read")
        }
        do {
            return (
                id,
                try ServerAPIPrivateKey(
                    pemRepresentation: pem, source: path, setting: "APPSTORE_CONNECT_PRIVATE_KEY_FILE",
                    fix: "set it to the App Store Connect API key (.p8) that reconcile signs with"
                )
            )
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    private func note(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
