import AppleFixtureFiles
import AppReceipt
import AppStoreClient
import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
import X509

/// The App Store Server API paths end to end: transaction ids looked up, signed transactions confirmed (a refund
/// since the device signed shows), receipts read through Transaction History; the fake App Store signs with its own
/// chain, checks the workers' tokens, and injects faults.
@Suite("App Store Server API end to end", .serialized, .ownThread)
struct ServerAPITests {
    static func enqueueTransaction(
        _ h: Harness, _ transactionId: String, order: String, user: String = "user-1",
        product: String = "pro.monthly"
    ) throws -> Int64 {
        try h.store.enqueueTransaction(
            signedTransaction: nil, transactionId: transactionId, orderId: order, userId: user, productId: product,
            bundleId: "com.example.app"
        )
    }

    @Test("a transaction id is looked up, its signed transaction verified and credited; unknown ids are not found")
    func transactionIds() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly"),
            FakePurchase(environment: "Sandbox", bundleId: "com.example.app", productId: "pro.monthly"),
        ])
        let production = try Self.enqueueTransaction(h, added[0].transactionId, order: "o-1")
        let sandbox = try Self.enqueueTransaction(h, added[1].transactionId, order: "o-2")
        let unknown = try Self.enqueueTransaction(h, "9999999999999999", order: "o-3")
        try h.drain(serverAPI: true)
        #expect(try h.job(production)["state"] == "verified")
        #expect(try h.job(production)["environment"] == "Production")
        let hopped = try h.job(sandbox)
        #expect(hopped["state"] == "verified", "\(hopped)")
        #expect(hopped["environment"] == "Sandbox", "the sandbox hop: production answered 4040010")
        #expect(try h.job(unknown)["reason"] == "transaction_not_found")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "2")
    }

    @Test("a signed transaction is confirmed with Apple: refunded since the device signed it → refunded")
    func confirmation() throws {
        let h = try Harness()
        // Apple holds the purchase as refunded; the device's copy, signed before the refund, still says "bought".
        let refunded = try h.fake.purchases.add([
            FakePurchase(
                bundleId: "com.example.app", productId: "pro.monthly",
                revocationDate: Int64(Date().timeIntervalSince1970 * 1000) - 1000, revocationReason: 0
            ),
        ])[0]
        let signed = (signedTransaction: try SignedTransactionTests.sign(.init(transactionId: refunded.transactionId)), 0)
        let confirmed = try h.store.enqueueTransaction(
            signedTransaction: signed.signedTransaction, orderId: "confirmed", userId: "u", productId: "pro.monthly",
            bundleId: "com.example.app"
        )
        try h.drain(serverAPI: true)
        let job = try h.job(confirmed)
        #expect(job["reason"] == "refunded", "\(job)")

        // APPSTORE_CONFIRM=never decides on the device's copy.
        let unconfirmed = try h.store.enqueueTransaction(
            signedTransaction: signed.signedTransaction, orderId: "unconfirmed", userId: "u", productId: "pro.monthly",
            bundleId: "com.example.app"
        )
        try h.drain(serverAPI: true) { $0.confirmSignedTransactions = false }
        #expect(try h.job(unconfirmed)["state"] == "verified")
    }

    @Test("RECEIPT_SOURCE=api: a real receipt's transaction id, then the customer's history, verified and credited", .needsAppleFixtures)
    func receiptsThroughAPI() throws {
        let h = try Harness()
        let receipt = try TestServer.fixture("tpinappreceipt-production-receipt.b64")
        let transactionId = try #require(try AppReceipt.decode(base64: receipt).purchases.first?.transactionId)
        _ = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", transactionId: transactionId),
        ])
        let real = try h.enqueue(receipt, order: "via-api")
        let scenario = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("1")]), order: "not-pkcs7")
        try h.drain(serverAPI: true) { $0.receiptSource = .serverAPI }
        let job = try h.job(real)
        #expect(job["state"] == "verified", "\(job)")
        #expect(job["result"]?.contains(transactionId) == true, "\(job)")
        #expect(try h.job(scenario)["reason"] == "invalid_receipt")
        #expect(h.fake.stats().total == 0, "verifyReceipt was not asked")
    }

    @Test("lookup-order prints an order's verified transactions; an unknown order exits 1")
    func lookupOrder() async throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", orderId: "MK5TTTVWJH"),
            FakePurchase(bundleId: "com.example.app", productId: "gems.500", orderId: "MK5TTTVWJH"),
        ])
        let directory = NSTemporaryDirectory() + "rw-lookup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let environment = ChildProcess.environment(setting: [
            "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
            "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der",
            "APPSTORE_ONLINE_CHECKS": "off", "APPLE_BUNDLE_IDS": "com.example.app",
        ])
        let found = try ChildProcess(["lookup-order", "MK5TTTVWJH"], environment: environment)
        #expect(await found.exit(within: 60) == 0, "\(found.output)")
        #expect(found.output.contains("2 transactions"), "\(found.output)")
        for purchase in added { #expect(found.output.contains(purchase.transactionId), "\(found.output)") }
        #expect(!found.output.contains("not verified"), "\(found.output)")
        let unknown = try ChildProcess(["lookup-order", "NOSUCHORDER"], environment: environment)
        #expect(await unknown.exit(within: 60) == 1, "\(unknown.output)")
        #expect(unknown.output.contains("NOSUCHORDER"), "\(unknown.output)")
    }

    @Test("lookup-order leaves out another app's transactions, names them, and exits 5; --bundle-id must be ours")
    func lookupOrderForeign() async throws {
        var fake = FakeAppStoreConfiguration()
        fake.orderLookupAcrossApps = true
        let h = try Harness(fakeConfiguration: fake)
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", orderId: "MK5TTTVWJH", storefront: "GBR"),
            FakePurchase(bundleId: "com.stranger.app", productId: "secret.product", orderId: "MK5TTTVWJH"),
            FakePurchase(bundleId: "com.example.app", productId: "gems.500", orderId: "OURSONLY"),
        ])
        let directory = NSTemporaryDirectory() + "rw-lookup-foreign-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let environment = ChildProcess.environment(setting: [
            "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
            "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der",
            "APPSTORE_ONLINE_CHECKS": "off", "APPLE_BUNDLE_IDS": "com.example.app",
        ])
        let mixed = try ChildProcess(["lookup-order", "MK5TTTVWJH"], environment: environment)
        #expect(await mixed.exit(within: 60) == 5, "\(mixed.output)")
        #expect(mixed.output.contains(added[0].transactionId), "\(mixed.output)")
        #expect(mixed.output.contains("GBR 143444"), "the storefront and its id: \(mixed.output)")
        #expect(mixed.output.contains("LEFT OUT: 1 of 2"), "\(mixed.output)")
        #expect(mixed.output.contains("of com.stranger.app, not one of our apps"), "\(mixed.output)")
        #expect(!mixed.output.contains("secret.product"), "nothing of another app's purchase but its id: \(mixed.output)")

        let ours = try ChildProcess(["lookup-order", "OURSONLY"], environment: environment)
        #expect(await ours.exit(within: 60) == 0, "\(ours.output)")
        #expect(ours.output.contains(added[2].transactionId), "\(ours.output)")
        #expect(!ours.output.contains("LEFT OUT"), "\(ours.output)")

        let stranger = try ChildProcess(
            ["lookup-order", "MK5TTTVWJH", "--bundle-id", "com.stranger.app"], environment: environment
        )
        #expect(await stranger.exit(within: 60) == 2, "\(stranger.output)")
        #expect(stranger.output.contains("not one of APPLE_BUNDLE_IDS"), "\(stranger.output)")
    }

    @Test("lookup-order over TLS to the fake: its certificate trusted through APPSTORE_CA_FILE, refused without it")
    func lookupOrderOverTLS() async throws {
        let directory = NSTemporaryDirectory() + "rw-lookup-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var fake = FakeAppStoreConfiguration()
        fake.tls = FakeAppStoreTLS(authorityCertificatePath: directory + "/ca.pem")
        let h = try Harness(fakeConfiguration: fake)
        #expect(h.fake.apiProductionURL.hasPrefix("https://"))
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", orderId: "TLSORDER01")
        ])
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let settings = [
            "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
            "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der",
            "APPSTORE_ONLINE_CHECKS": "off", "APPLE_BUNDLE_IDS": "com.example.app",
        ]
        let trusted = try ChildProcess(
            ["lookup-order", "TLSORDER01"],
            environment: ChildProcess.environment(setting: settings.merging(["APPSTORE_CA_FILE": directory + "/ca.pem"]) { $1 })
        )
        #expect(await trusted.exit(within: 60) == 0, "\(trusted.output)")
        #expect(trusted.output.contains(added[0].transactionId), "\(trusted.output)")
        let untrusted = try ChildProcess(
            ["lookup-order", "TLSORDER01"], environment: ChildProcess.environment(setting: settings)
        )
        #expect(await untrusted.exit(within: 60) == 1, "\(untrusted.output)")
        #expect(untrusted.output.lowercased().contains("certificate"), "\(untrusted.output)")
    }

    @Test("a burst of 150 lookups is paced under Apple's 50 requests per second: no second holds more releases than rate and burst, every job verified")
    func pacing() throws {
        var fake = FakeAppStoreConfiguration()
        fake.apiRateLimit = 55
        let h = try Harness(fakeConfiguration: fake)
        let added = try h.fake.purchases.add(
            (0..<150).map { _ in FakePurchase(bundleId: "com.example.app", productId: "pro.monthly") }
        )
        for (index, purchase) in added.enumerated() {
            _ = try Self.enqueueTransaction(h, purchase.transactionId, order: "burst-\(index)", user: "u-\(index)")
        }
        try h.drain(serverAPI: true) { $0.maxInFlight = 200; $0.claimBatch = 200 }
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == "150")

        // What the client controls: the moments it hands requests to the transport. The pacer checks and records the
        // releases it actually makes, so no one second may hold more than rate + burst of them (the token bucket
        // allows rate + burst - 1 in a half-open second; one more when a release falls exactly one second after
        // another, to rounding), however late its timers fired. (Before that check, a process stalled for 0.6 s
        // released its overdue requests together: 66 in one second, and the fake answered 22 × 429.)
        let configuration = h.serverAPI.configuration
        let key = RequestPacer.Key(bundleId: "com.example.app", operation: .transactionInfo)
        let releases = h.serverAPI.pacer.releases(of: key)
        let bound = Int(configuration.requestsPerSecond(for: .transactionInfo)) + configuration.burst
        let mostReleased = ServerAPIStats(arrivals: ["released": releases]).maxPerSecond("released")
        let stats = h.fake.apiStats()
        let rateLimited = stats.count("production.transaction_info", "429")
        #expect(mostReleased <= bound, "\(mostReleased) requests released in one second")

        // The fake limits as Apple does, by when its single event loop reads a request (there is no earlier moment
        // it can see: no receive timestamps on TCP). Spaced requests arrive spaced and it answers no 429, unless that
        // thread alone (sharing a busy machine with the workers and PostgreSQL) was descheduled while the client kept
        // sending: the requests sent meanwhile wait in the socket buffer and are read, and counted, together. Apple's
        // edge can bunch requests the same way, so the 429s are not the client's to prevent; what must hold is that a
        // 429 costs nothing but a retry: every job was verified (above), each attempt was one request released
        // through the pacer, and there were at least as many retries as 429s.
        let attempts = try #require(Int(try h.scalar("SELECT sum(attempts) FROM receipt_jobs") ?? ""))
        #expect(attempts == releases.count, "attempts vs requests released")
        #expect(attempts - 150 >= rateLimited, "\(stats.answers)")
        if rateLimited > 0 {
            print("pacing: the fake answered \(rateLimited) × 429 with \(stats.maxPerSecond("transaction_info")) "
                + "arrivals in its busiest second, while at most \(mostReleased) requests were released in any second")
        }
    }

    @Test("Apple's test-CA transaction, trusted, is for another app: bundle_mismatch; Xcode receipts through the API", .needsAppleFixtures)
    func otherAppAndXcode() throws {
        let h = try Harness()
        let jws = try TestServer.fixture("appstoreserverlibrary-testca-signed-transaction.jws")
        let id = try h.store.enqueueTransaction(
            signedTransaction: jws, orderId: "test-ca", userId: "u", productId: "pro.monthly", bundleId: "com.example.app"
        )
        let header = try JSONSerialization.jsonObject(
            with: Data(base64Encoded: SignedDataVerifierHeader.padded(String(jws.split(separator: ".")[0])))!
        ) as? [String: Any]
        let testCA = try Certificate(derEncoded: Array(Data(base64Encoded: (header?["x5c"] as? [String])![2])!))
        let withTestCA = SignedDataVerifier(
            configuration: .init(rootCertificates: [testCA], onlineChecks: false)
        )
        // Xcode's receipts (one with transaction "0", one empty) are signed by Xcode's own certificate, not Apple's:
        // with RECEIPT_SOURCE=api their ids are never read (the App Store Server API does not know them anyway).
        let xcode = try h.enqueue(
            try TestServer.fixture("appstoreserverlibrary-xcode-receipt-with-transaction.b64"), order: "xcode"
        )
        let empty = try h.enqueue(try TestServer.fixture("appstoreserverlibrary-xcode-receipt-empty.b64"), order: "empty")
        let threads = try h.startWorkers(1, serverAPI: true, signedData: withTestCA) { $0.receiptSource = .serverAPI }
        let deadline = Date(timeIntervalSinceNow: 60)
        #expect(threads.allSatisfy { $0.wait(seconds: deadline.timeIntervalSinceNow) })
        let job = try h.job(id)
        #expect(job["reason"] == "bundle_mismatch", "\(job)")
        #expect(try h.job(xcode)["reason"] == "invalid_receipt")
        #expect(try h.job(empty)["reason"] == "invalid_receipt")
    }

    @Test("429 with Retry-After and 5000001 are retried, then the job is verified")
    func retries() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "pro.monthly")])
        h.fake.injectAPIFaults([.rateLimited(retryAfterMilliseconds: 500), .internalRetryable])
        let id = try Self.enqueueTransaction(h, added[0].transactionId, order: "o-retry")
        try h.drain(serverAPI: true)
        let job = try h.job(id)
        #expect(job["state"] == "verified", "\(job)")
        #expect(job["attempts"] == "3", "\(job)")
    }

    @Test("without App Store Server API credentials a transaction id costs no attempt and waits")
    func withoutCredentials() throws {
        let h = try Harness()
        let id = try Self.enqueueTransaction(h, "2000000000000777", order: "o-wait")
        let threads = try h.startWorkers(1, serverAPI: false) { $0.drain = false }
        defer { for thread in threads { _ = thread.stop() } }
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline, try h.scalar("SELECT last_error FROM receipt_jobs WHERE id = $1", [String(id)]) == nil {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let job = try h.job(id)
        #expect(job["state"] == "retry" || job["state"] == "queued" || job["state"] == "running", "\(job)")
        #expect(job["attempts"] == "0", "\(job)")
        #expect(job["last_error"]?.contains("App Store Server API") == true, "\(job)")
    }
}

/// Base64url padding, for reading JWS headers in tests.
enum SignedDataVerifierHeader {
    static func padded(_ base64url: String) -> String {
        let base64 = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return base64 + String(repeating: "=", count: (4 - base64.count % 4) % 4)
    }
}
