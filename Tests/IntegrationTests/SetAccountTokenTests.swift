#if os(Linux)
import AppStoreClient
import AppStoreModel
import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// `receipt-worker set-account-token`: Apple's Set App Account Token through the client and the fake App Store over
/// loopback (the token recorded on the purchase, Apple's errors for what it refuses), and the built binary's local
/// claim against a real PostgreSQL.
@Suite("set-account-token: Apple's Set App Account Token, and the purchase claimed here", .serialized, .ownThread)
struct SetAccountTokenTests {
    static let carol = "7389a31a-fb6d-4569-a2a6-db7d85d84813"
    static let dave = "0c7b6f1e-3a2d-4c5b-8e9f-1a2b3c4d5e6f"

    /// The payload of a JWS (its middle part), as text.
    static func payload(_ jws: String) -> String {
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return "" }
        var text = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    @Test("the client and the fake: the token set on the chain (a later lookup shows it), Apple's errors classified")
    func clientAndFake() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "club.monthly", type: "Auto-Renewable Subscription",
                         expiresDate: Harness.now + 30 * 86_400_000),
            FakePurchase(environment: "Sandbox", bundleId: "com.example.app", productId: "coins.100"),
        ])
        let chain = added[0].transactionId
        let renewal = try h.fake.purchases.renew(originalTransactionId: chain)
        let (set, _) = h.serverAPI.setAppAccountToken(
            originalTransactionId: chain, appAccountToken: Self.carol.uppercased(), bundleId: "com.example.app"
        )
        guard case .success(true, .production) = set else {
            Issue.record("expected success in production, got \(set)")
            return
        }
        // Every transaction of the chain carries it, re-signed: Get Transaction Info shows it.
        for purchase in h.fake.purchases.purchases where purchase.originalTransactionId == chain {
            #expect(purchase.purchase.appAccountToken == Self.carol)
            let (info, _) = h.serverAPI.transactionInfo(transactionId: purchase.transactionId, bundleId: "com.example.app")
            #expect(Self.payload(info.value ?? "").contains(Self.carol), "\(purchase.transactionId)")
        }
        // Production does not know the sandbox purchase: asked in the sandbox next.
        let (sandbox, calls) = h.serverAPI.setAppAccountToken(
            originalTransactionId: added[1].transactionId, appAccountToken: Self.carol, bundleId: "com.example.app"
        )
        guard case .success(_, .sandbox) = sandbox else {
            Issue.record("expected success in the sandbox, got \(sandbox)")
            return
        }
        #expect(calls.count == 2)

        let renewalId = try #require(h.fake.purchases.purchases.last?.transactionId)
        #expect(renewal.transactionId == renewalId)
        let (notOriginal, _) = h.serverAPI.setAppAccountToken(
            originalTransactionId: renewalId, appAccountToken: Self.carol, bundleId: "com.example.app",
            environment: .production
        )
        guard case .rejected(let failure) = notOriginal else {
            Issue.record("a renewal's id: expected rejected, got \(notOriginal)")
            return
        }
        #expect(failure.appleStatus == 4000187)
        let (unknown, _) = h.serverAPI.setAppAccountToken(
            originalTransactionId: "9999999999999999", appAccountToken: Self.carol, bundleId: "com.example.app"
        )
        guard case .notFound(let missing) = unknown else {
            Issue.record("an unknown id: expected notFound, got \(unknown)")
            return
        }
        #expect(missing.appleStatus == 4040010)
        // Refused here, never sent: a token that is not a UUID, an id that is not digits.
        for (id, token) in [(chain, "not-a-uuid"), ("12a", Self.carol)] {
            let (refused, sent) = h.serverAPI.setAppAccountToken(
                originalTransactionId: id, appAccountToken: token, bundleId: "com.example.app"
            )
            guard case .rejected = refused else {
                Issue.record("\(id) \(token): expected rejected, got \(refused)")
                continue
            }
            #expect(sent.isEmpty)
        }
        #expect(ServerAPIClient.classify(httpStatus: 400, errorCode: 4000183) == .rejected)
        #expect(ServerAPIClient.classify(httpStatus: 400, errorCode: 4000185) == .rejected)
        #expect(ServerAPIClient.classify(httpStatus: 400, errorCode: 4000008) == .rejected)
    }

    /// The environment of a `set-account-token` child against `h`: its fake App Store, its key, its database.
    static func environment(_ h: Harness, directory: String) throws -> [String: String] {
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        return ChildProcess.environment(setting: [
            "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
            "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPLE_BUNDLE_IDS": "com.example.app",
            "DATABASE_URL": h.databaseURL,
        ])
    }

    static func run(_ arguments: [String], _ environment: [String: String]) async throws
        -> (status: Int32?, output: String, errors: String)
    {
        let child = try ChildProcess(["set-account-token"] + arguments, environment: environment, separateErrors: true)
        let status = await child.exit(within: 60)
        return (status, child.output, child.errors)
    }

    static func directory() throws -> String {
        let directory = NSTemporaryDirectory() + "rw-token-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("--user-id: Apple's token set, the token registered, the token-less purchase Apple announced claimed; again: no change")
    func claimsLocally() async throws {
        let h = try LostOrderTests.harness()
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try Self.environment(h, directory: directory)
        // An offer code redeemed in the App Store: no token at Apple, and its notification kept unclaimed here.
        let id = "3000000000000951"
        try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100", transactionId: id)])
        #expect(try LostOrderTests.apply(h, try LostOrderTests.charge(id, token: nil)) == "applied")
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "1")

        let done = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.carol, "--user-id", "carol", "--json"],
            environment
        )
        #expect(done.status == 0, "\(done.output) \(done.errors)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(done.output.utf8)) as? [String: Any])
        #expect(document["environment"] as? String == "Production")
        let local = try #require(document["local"] as? [String: Any], "\(document)")
        #expect((local["claimed"] as? [[String: Any]])?.map { $0["transaction_id"] as? String } == [id], "\(local)")
        #expect(h.fake.purchases.purchases.first { $0.transactionId == id }?.purchase.appAccountToken == Self.carol)
        #expect(try LostOrderTests.ledger(h) == ["\(id) carol apple:\(id)"])
        #expect(try h.scalar("SELECT user_id FROM receipt_account_tokens WHERE app_account_token = $1", [Self.carol]) == "carol")
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "0")

        let again = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.carol, "--user-id", "carol"], environment
        )
        #expect(again.status == 0, "\(again.output) \(again.errors)")
        #expect(again.output.contains("purchases it credited: 0") && !again.output.contains("claimed "), "\(again.output)")
        #expect(try LostOrderTests.ledger(h).count == 1)
    }

    @Test("a purchase kept under another token is listed, not claimed")
    func otherTokenLeft() async throws {
        let h = try LostOrderTests.harness()
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try Self.environment(h, directory: directory)
        let id = "3000000000000961"
        try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100", transactionId: id)])
        #expect(try LostOrderTests.apply(h, try LostOrderTests.charge(id, token: LostOrderTests.unknown)) == "applied")
        let done = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.carol, "--user-id", "carol"], environment
        )
        #expect(done.status == 0, "\(done.output) \(done.errors)")
        #expect(done.output.contains("left unclaimed \(id)"), "\(done.output)")
        #expect(try LostOrderTests.ledger(h).isEmpty)
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "1")
    }

    @Test("Apple's try-again answers (5000001, a 503 page, 429) are retried, 3 attempts in all; then exit 1")
    func retries() async throws {
        let h = try Harness()
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try Self.environment(h, directory: directory)
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100")])
        let id = added[0].transactionId
        h.fake.injectAPIFaults([.internalRetryable, .rateLimited(retryAfterMilliseconds: 200)])
        let third = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.carol, "--environment", "Production"],
            environment
        )
        #expect(third.status == 0, "\(third.output) \(third.errors)")
        #expect(h.fake.purchases.purchases.first?.purchase.appAccountToken == Self.carol)
        #expect(h.fake.apiStats().count("production.set_app_account_token", "200") == 1)

        h.fake.injectAPIFaults([.internalRetryable, .html503, .internalRetryable])
        let failed = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.dave, "--environment", "Production"],
            environment
        )
        #expect(failed.status == 1)
        #expect(failed.errors.contains("no answer after 3 attempts"), "\(failed.errors)")
        #expect(h.fake.purchases.purchases.first?.purchase.appAccountToken == Self.carol)
        #expect(h.fake.apiStats().count("production.set_app_account_token", "200") == 1)
    }

    @Test("refusals: bad input exit 2 with nothing sent; Apple's refusals and a token of another customer exit 1")
    func refusals() async throws {
        let h = try LostOrderTests.harness()
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try Self.environment(h, directory: directory)
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100")])
        let id = added[0].transactionId
        for arguments in [
            ["--app-account-token", Self.carol],
            ["--original-transaction-id", id],
            ["--original-transaction-id", id, "--app-account-token", "not-a-uuid"],
            ["--original-transaction-id", "12a", "--app-account-token", Self.carol],
            ["--original-transaction-id", id, "--app-account-token", Self.carol, "--environment", "Staging"],
        ] {
            let bad = try await Self.run(arguments, environment)
            #expect(bad.status == 2, "\(arguments): \(bad.output) \(bad.errors)")
        }
        #expect(h.fake.apiStats().count("production.set_app_account_token", "200") == 0)

        let unknown = try await Self.run(
            ["--original-transaction-id", "9999999999999999", "--app-account-token", Self.carol], environment
        )
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("does not know"), "\(unknown.errors)")

        // dave's token: refused before Apple is asked; Apple's purchase keeps no token.
        #expect(try h.scalar("SELECT register_account_token('dave', $1)", [Self.dave]) == "0")
        let conflict = try await Self.run(
            ["--original-transaction-id", id, "--app-account-token", Self.dave, "--user-id", "carol"], environment
        )
        #expect(conflict.status == 1)
        #expect(conflict.errors.contains("Apple was not asked") && conflict.errors.contains("token_conflict"), "\(conflict.errors)")
        #expect(h.fake.purchases.purchases.first?.purchase.appAccountToken == nil)
        #expect(h.fake.apiStats().count("production.set_app_account_token", "200") == 0)
    }
}
#endif
