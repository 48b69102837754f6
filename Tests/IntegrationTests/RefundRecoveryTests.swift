import AppStoreClient
import AppStoreSignedData
@testable import FakeAppStore
import Foundation
import Logging
import PostgresClient
import Testing
@testable import Workers

/// `receipt-worker refunds` (issue 38): Get Refund History v2 at the fake App Store over libcurl (a real JWT, pages of
/// two), every refunded transaction verified, and the refunds the ledger missed applied as their REFUND notification
/// would have been, against a real PostgreSQL: once, and a second run changes nothing.
@Suite("Refund recovery: Get Refund History, missed refunds applied once", .serialized, .ownThread)
struct RefundRecoveryTests {
    static let app = "com.example.app"

    /// `count` consumables bought by one customer at the fake App Store, each credited here from its signed
    /// transaction (orders o-1…); ids 30000000000002NN.
    static func credited(_ h: Harness, count: Int, first: Int = 1, customer: String = "customer-a") throws
        -> [SignedPurchase]
    {
        _ = try h.db.query(
            "INSERT INTO receipt_products (product_id, kind) VALUES ('coins.100', 'consumable') ON CONFLICT DO NOTHING"
        )
        // The fake App Store's id for the app, which its notifications carry.
        let appAppleId = FakePayloads.appAppleId(bundleId: app, environment: "Production").map { String($0) }
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = $2", [appAppleId, app])
        let purchases = try h.fake.purchases.add((first..<(first + count)).map { index in
            FakePurchase(
                bundleId: app, productId: "coins.100", transactionId: String(3_000_000_000_000_200 + index),
                customerId: customer, purchaseDate: Harness.now - 120_000
            )
        })
        for purchase in purchases {
            _ = try SignedTransactionTests.enqueue(
                h, purchase.signedTransaction, order: "o-\(purchase.transactionId.suffix(3))", product: "coins.100"
            )
        }
        try h.drain()
        return purchases
    }

    static func recovery(_ h: Harness, verifier: SignedDataVerifier? = nil) -> RefundRecovery {
        var logger = Logger(label: "test-refunds")
        logger.logLevel = .critical
        return RefundRecovery(
            client: h.serverAPI, verifier: verifier ?? h.signedData, bundleIds: Set(TestServer.bundleIds),
            logger: logger
        )
    }

    /// What a run leaves behind: revoked ledger rows, revoked events, revocation history, known revocations.
    static func state(_ h: Harness) throws -> [String] {
        try [
            "SELECT count(*) FROM receipt_transactions WHERE revoked_at IS NOT NULL",
            "SELECT count(*) FROM receipt_events WHERE kind = 'revoked' AND notification_type = 'REFUND_HISTORY'",
            "SELECT count(*) FROM receipt_revocations",
            "SELECT count(*) FROM receipt_known_revocations",
        ].map { try h.scalar($0) ?? "" }
    }

    @Test("a refund missed (its REFUND never delivered): listed, applied once as the notification would be; again: no change")
    func missedRefundRecovered() throws {
        let h = try Harness()
        let bought = try Self.credited(h, count: 2)
        let refunded = bought[0].transactionId
        try h.fake.purchases.refund(transactionId: refunded, reason: 1, delivered: false)
        #expect(try Self.state(h) == ["0", "0", "0", "0"])

        let recovery = Self.recovery(h)
        // Asked about the customer's other purchase: Apple answers for the customer.
        var lookup = try recovery.lookUp(transactionId: bought[1].transactionId, bundleId: Self.app).get()
        #expect(lookup.environment == .production)
        #expect(lookup.refunds.map(\.transaction.transactionId) == [refunded])
        #expect(lookup.refunds.allSatisfy { $0.foreign == nil } && lookup.unverified.isEmpty)
        try recovery.apply(&lookup, h.db)
        #expect(lookup.refunds.map(\.outcome) == ["applied"])

        // As a REFUND: the credit revoked (with Apple's reason), its event, the revenue's refunded share, the refund
        // known for any later copy.
        #expect(try Self.state(h) == ["1", "1", "1", "1"])
        #expect(
            try h.scalar(
                "SELECT revocation_reason || ' / ' || revocation_type FROM receipt_transactions WHERE transaction_id = $1",
                [refunded]
            ) == "refunded by Apple (reason 1) / REFUND_FULL"
        )
        #expect(
            try h.scalar(
                "SELECT user_id || ' ' || order_id FROM receipt_events WHERE kind = 'revoked' AND transaction_id = $1",
                [refunded]
            ) == "user-1 o-\(refunded.suffix(3))"
        )
        #expect(
            try h.scalar("SELECT purchases || ' ' || (refunded > 0) || ' ' || (net > 0) FROM receipt_revenue")
                == "2 true true"
        )
        #expect(try h.scalar("SELECT receipt_known_revoked('Production', $1, $1, NULL, NULL)::text", [refunded]) == "true")

        // A second run changes nothing: known, no event, no history row.
        var again = try recovery.lookUp(transactionId: bought[0].transactionId, bundleId: Self.app).get()
        try recovery.apply(&again, h.db)
        #expect(again.refunds.map(\.outcome) == ["known"])
        #expect(try Self.state(h) == ["1", "1", "1", "1"])

        // The REFUND notification delivered late changes nothing either.
        let late = try #require(h.fake.purchases.notifications.last { $0.notificationType == "REFUND" })
        _ = try NotificationTests.receive(h, late.signedPayload)
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE revoked_at IS NOT NULL") == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'revoked'") == "1")
    }

    @Test("a customer's refunds over several pages: every page read (revision, hasMore), all applied")
    func paged() throws {
        let h = try Harness()
        let bought = try Self.credited(h, count: 5)
        for purchase in bought { try h.fake.purchases.refund(transactionId: purchase.transactionId, delivered: false) }
        var lookup = try Self.recovery(h).lookUp(transactionId: bought[0].transactionId, bundleId: Self.app).get()
        #expect(lookup.pages == 3, "pages of two")
        #expect(Set(lookup.refunds.compactMap(\.transaction.transactionId)) == Set(bought.map(\.transactionId)))
        #expect(h.fake.apiStats().count("production.refund_history", "200") == 3)
        try Self.recovery(h).apply(&lookup, h.db)
        #expect(lookup.refunds.map(\.outcome) == Array(repeating: "applied", count: 5))
        #expect(try Self.state(h) == ["5", "5", "5", "5"])
    }

    @Test("a refunded transaction not ours (another app) is listed as foreign and never applied")
    func foreignNotApplied() throws {
        let h = try Harness()
        _ = try Self.credited(h, count: 1)
        let stranger = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.stranger.app", productId: "coins.100", transactionId: "3000000000000299")
        ])[0]
        try h.fake.purchases.refund(transactionId: stranger.transactionId, delivered: false)
        let recovery = Self.recovery(h)
        // Asked for the stranger's app (the token names it): Apple answers, and the command will not apply it.
        var lookup = try recovery.lookUp(transactionId: stranger.transactionId, bundleId: "com.stranger.app").get()
        #expect(lookup.refunds.count == 1)
        #expect(lookup.refunds[0].foreign?.contains("not in APPLE_BUNDLE_IDS") == true, "\(lookup.refunds)")
        try recovery.apply(&lookup, h.db)
        #expect(lookup.refunds[0].outcome == nil)
        // And the database refuses it on its own: the app is not in receipt_apps.
        #expect(try recovery.apply(lookup.refunds[0].transaction, h.db) == "not_ours")
        #expect(try Self.state(h) == ["0", "0", "0", "0"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "0")
    }

    /// A refunded transaction as Apple signs it, decoded (what `lookUp` makes of a verified JWS).
    static func transaction(_ change: (inout [String: Any]) -> Void = { _ in }) throws -> SignedTransaction {
        var object: [String: Any] = [
            "transactionId": "3000000000000201", "originalTransactionId": "3000000000000201", "bundleId": app,
            "productId": "coins.100", "environment": "Production", "type": "Consumable", "quantity": 1,
            "purchaseDate": Harness.now - 120_000, "signedDate": Harness.now, "revocationDate": Harness.now - 1000,
            "revocationReason": 0,
        ]
        change(&object)
        return try SignedTransaction(payload: Array(JSONSerialization.data(withJSONObject: object)))
    }

    @Test("what is ours to apply: the app asked about and one of ours, the environment that answered, a revocation")
    func foreignRules() throws {
        let ours: Set<String> = [Self.app]
        let foreign = { (transaction: SignedTransaction, bundle: String, environment: AppStoreEndpoint) in
            RefundRecovery.foreign(transaction, bundleId: bundle, environment: environment, ours: ours)
        }
        #expect(foreign(try Self.transaction(), Self.app, .production) == nil)
        #expect(foreign(try Self.transaction { $0["bundleId"] = "com.stranger.app" }, Self.app, .production) != nil)
        #expect(foreign(try Self.transaction(), "com.example.other", .production) != nil, "asked about another app")
        #expect(foreign(try Self.transaction(), Self.app, .sandbox) != nil, "signed for production, answered by sandbox")
        #expect(foreign(try Self.transaction { $0["environment"] = "Xcode" }, Self.app, .production) != nil)
        #expect(foreign(try Self.transaction { $0["revocationDate"] = nil }, Self.app, .production) != nil)
    }

    @Test("a prorated refund keeps the credit and records its share, once; one never credited here is not_credited")
    func prorated() throws {
        let h = try Harness()
        let bought = try Self.credited(h, count: 1)
        let recovery = Self.recovery(h)
        let prorated = try Self.transaction {
            $0["transactionId"] = bought[0].transactionId
            $0["originalTransactionId"] = bought[0].transactionId
            $0["revocationType"] = "REFUND_PRORATED"
            $0["revocationPercentage"] = 25_000
        }
        #expect(try recovery.apply(prorated, h.db) == "applied")
        #expect(
            try h.scalar(
                "SELECT (revoked_at IS NULL) || ' ' || revocation_type || ' ' || revocation_percentage "
                    + "FROM receipt_transactions"
            ) == "true REFUND_PRORATED 25000"
        )
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'refunded_prorated'") == "1")
        #expect(try recovery.apply(prorated, h.db) == "known")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'refunded_prorated'") == "1")
        let stranger = try Self.transaction {
            $0["transactionId"] = "3000000000000777"
            $0["revocationType"] = "REFUND_PRORATED"
            $0["revocationPercentage"] = 25_000
        }
        #expect(try recovery.apply(stranger, h.db) == "not_credited")
        var unrevoked = try Self.transaction { $0["transactionId"] = bought[0].transactionId }
        unrevoked.revocationDateMs = nil
        #expect(try recovery.apply(unrevoked, h.db) == "not_ours", "no revocation: nothing to apply")
        #expect(try Self.state(h) == ["0", "0", "0", "0"])
    }

    @Test("signed transactions that do not chain to a trusted root are not applied")
    func untrustedNotApplied() throws {
        let h = try Harness()
        let bought = try Self.credited(h, count: 1)
        try h.fake.purchases.refund(transactionId: bought[0].transactionId, delivered: false)
        let strangerRoot = SignedDataVerifier(
            configuration: .init(rootCertificates: [try Harness.signer.get().chain.root], onlineChecks: false)
        )
        let lookup = try Self.recovery(h, verifier: strangerRoot)
            .lookUp(transactionId: bought[0].transactionId, bundleId: Self.app).get()
        #expect(lookup.refunds.isEmpty)
        #expect(lookup.unverified.count == 1)
        #expect(try Self.state(h) == ["0", "0", "0", "0"])
    }

    @Test("a transaction Apple does not know is not found (no environment knows it)")
    func notFound() throws {
        let h = try Harness()
        let result = Self.recovery(h).lookUp(transactionId: "3999999999999999", bundleId: Self.app)
        guard case .failure(let error) = result else {
            Issue.record("expected not found, got \(result)")
            return
        }
        #expect(error.notFound)
        #expect(h.fake.apiStats().count("sandbox.refund_history", "4040010") == 1, "the sandbox asked once")
    }

    @Test("--all-credited-since: one lookup per purchase chain, the missed refunds applied; a second sweep applies none")
    func sweep() throws {
        let h = try Harness()
        let first = try Self.credited(h, count: 2, customer: "customer-a")
        let second = try Self.credited(h, count: 2, first: 11, customer: "customer-b")
        try h.fake.purchases.refund(transactionId: first[0].transactionId, delivered: false)
        try h.fake.purchases.refund(transactionId: second[1].transactionId, delivered: false)
        let recovery = Self.recovery(h)
        let since = Date(timeIntervalSinceNow: -3600)
        #expect(try recovery.candidates(since: since, limit: 100, h.db).count == 4)
        #expect(try recovery.candidates(since: Date(timeIntervalSinceNow: 3600), limit: 100, h.db).isEmpty)
        let listed = try recovery.sweep(since: since, limit: 100, apply: false, h.db)
        #expect(listed.refunds >= 2 && listed.applied == 0 && listed.failed == 0, "\(listed)")
        #expect(try Self.state(h) == ["0", "0", "0", "0"], "without apply nothing changes")

        let sweep = try recovery.sweep(since: since, limit: 100, apply: true, h.db)
        #expect(sweep.applied == 2 && sweep.failed == 0, "\(sweep)")
        #expect(sweep.asked <= 4)
        #expect(try Self.state(h) == ["2", "2", "2", "2"])
        let again = try recovery.sweep(since: since, limit: 100, apply: true, h.db)
        #expect(again.applied == 0 && again.known >= 2 && again.failed == 0, "\(again)")
        #expect(try Self.state(h) == ["2", "2", "2", "2"])
        #expect(try recovery.sweep(since: since, limit: 1, apply: true, h.db).asked == 1, "--limit bounds it")
        // Paced under Apple's Get Refund History limit, 10 a second in production.
        let releases = h.serverAPI.pacer.releases(
            of: .init(bundleId: Self.app, operation: .refundHistory, environment: .production)
        )
        #expect(releases.count >= 4)
        #expect(zip(releases, releases.dropFirst()).allSatisfy { $1 - $0 >= 0.1 - 1e-6 }, "\(releases)")
    }

    @Test("the command: --apply --json applies once (exit 0), again changes nothing; an unknown id exits 3")
    func command() async throws {
        let h = try Harness()
        let bought = try Self.credited(h, count: 1)
        try h.fake.purchases.refund(transactionId: bought[0].transactionId, delivered: false)
        let directory = NSTemporaryDirectory() + "rw-refunds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let environment = ChildProcess.environment(setting: [
            "APPSTORE_KEY_ID": Harness.apiKeyID, "APPSTORE_ISSUER_ID": Harness.apiIssuerID,
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8", "APPSTORE_API_URL": h.fake.apiProductionURL,
            "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL, "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der",
            "APPSTORE_ONLINE_CHECKS": "off", "APPLE_BUNDLE_IDS": Self.app, "DATABASE_URL": h.databaseURL,
        ])
        func run(_ arguments: [String]) async throws -> (Int32?, String) {
            let child = try ChildProcess(["refunds"] + arguments, environment: environment, separateErrors: true)
            let status = await child.exit(within: 60)
            return (status, status == 0 ? child.output : child.output + child.errors)
        }
        let id = bought[0].transactionId
        let listed = try await run(["--transaction-id", id])
        #expect(listed.0 == 0, "\(listed.1)")
        #expect(listed.1.contains(id) && listed.1.contains("not asked"), "\(listed.1)")
        #expect(try Self.state(h) == ["0", "0", "0", "0"], "without --apply nothing changes")

        let applied = try await run(["--transaction-id", id, "--apply", "--json"])
        #expect(applied.0 == 0, "\(applied.1)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(applied.1.utf8)) as? [String: Any], "\(applied.1)"
        )
        let refunds = try #require(document["refunds"] as? [[String: Any]])
        #expect(refunds.map { $0["outcome"] as? String } == ["applied"])
        #expect(try Self.state(h) == ["1", "1", "1", "1"])
        let again = try await run(["--transaction-id", id, "--apply"])
        #expect(again.0 == 0 && again.1.contains("applied 0, already known 1"), "\(again.1)")
        #expect(try Self.state(h) == ["1", "1", "1", "1"])

        let unknown = try await run(["--transaction-id", "3999999999999999"])
        #expect(unknown.0 == 3, "\(unknown.1)")
        let sweep = try await run(["--all-credited-since", "2000-01-01", "--apply"])
        #expect(sweep.0 == 0 && sweep.1.contains("applied 0, known 1"), "\(sweep.1)")
        let usage = try await run(["--apply"])
        #expect(usage.0 == 64, "\(usage.1)")
    }
}
