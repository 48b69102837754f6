import AppStoreModel
import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Testing
@testable import Workers

/// Get All Subscription Statuses applied as a notification would be (issue 23): the fake App Store holds the
/// subscription and its renewal, our database missed the DID_RENEW; the refresh asks Apple (the fake, over loopback,
/// with a real JWT), verifies every signed item and repairs the chain. Real PostgreSQL.
@Suite("Subscriptions refresh: Get All Subscription Statuses repairs a missed notification", .serialized, .ownThread)
struct SubscriptionRefreshTests {
    static let chain = SubscriptionTests.chain
    static let day = SubscriptionTests.day
    static let hour: Int64 = 3_600_000
    /// The first period: two hours (the test signing chain is valid from a day ago), ended an hour ago.
    static let period = 2 * hour
    static let start = Harness.now - period - hour
    static let end = Harness.now - hour

    /// The chain bought by user-1 (its first period credited by a SUBSCRIBED notification), held by the fake App
    /// Store too, which then renews it without our hearing of it (the DID_RENEW was not delivered).
    static func missedRenewal() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        _ = try h.db.query(
            "INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id) "
                + "VALUES ('Production', $1, 'user-1')", [chain]
        )
        try h.fake.purchases.add([
            FakePurchase(
                bundleId: "com.example.app", productId: "pro.monthly", transactionId: chain,
                type: "Auto-Renewable Subscription", purchaseDate: start, expiresDate: end
            )
        ])
        var subscribed = SubscriptionTests.Note(type: "SUBSCRIBED", subtype: "INITIAL_BUY", signedDate: start, status: 1)
        subscribed.purchaseDate = start
        subscribed.expiresDate = end
        #expect(try SubscriptionTests.deliver(h, subscribed) == ["applied"])
        #expect(try SubscriptionTests.subscription(h)["status"] == "active")
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(end))
        try h.fake.purchases.renew(
            originalTransactionId: chain, signedDate: Date(timeIntervalSince1970: Double(end) / 1000), delivered: false
        )
        return h
    }

    static func refresh(_ h: Harness, verifier: SignedDataVerifier? = nil) -> SubscriptionRefresh {
        var logger = Logger(label: "test-refresh")
        logger.logLevel = .critical
        return SubscriptionRefresh(client: h.serverAPI, verifier: verifier ?? h.signedData, logger: logger)
    }

    static func stale(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT original_transaction_id FROM receipt_subscriptions_stale(NULL, NULL, 0, NULL, 100)"
        ).rows.map { $0[0] ?? "" }
    }

    @Test("a missed DID_RENEW: the chain is stale, the refresh credits the period and the row is active again")
    func repairsMissedRenewal() throws {
        let h = try Self.missedRenewal()
        #expect(try Self.stale(h) == [Self.chain], "expires_at passed with no renewal and no expiry seen")
        let pass = try Self.refresh(h).runOnce(SubscriptionRefresh.Selection(staleHours: 0), h.db)
        #expect(pass.asked == 1 && pass.applied == 1 && pass.failed == 0)
        let row = try SubscriptionTests.subscription(h)
        #expect(row["status"] == "active")
        #expect(row["expires_ms"] == String(Self.end + Self.period), "the renewed period's end")
        #expect(row["user_id"] == "user-1")
        // The renewal is in the ledger, credited once to the chain's owner, with its event.
        #expect(
            try h.scalar(
                "SELECT count(*) FROM receipt_transactions WHERE original_transaction_id = $1 AND user_id = 'user-1' "
                    + "AND expires_date = to_timestamp($2::bigint / 1000.0)", [Self.chain, String(Self.end + Self.period)]
            ) == "1"
        )
        #expect(
            try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'renewed' AND notification_type = $1",
                         [SubscriptionRefresh.notificationType]) == "1"
        )
        #expect(
            try h.scalar(
                "SELECT count(*) FROM receipt_entitlements WHERE user_id = 'user-1' AND product_id = 'pro.monthly'"
            ) == "1",
            "served again"
        )
        #expect(try Self.stale(h).isEmpty, "no longer stale")

        // Asked again (by chain): Apple's answer is the same, the ledger and the events do not grow.
        let again = try Self.refresh(h).runOnce(SubscriptionRefresh.Selection(originalTransactionId: Self.chain), h.db)
        #expect(again.asked == 1 && again.failed == 0)
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "2")
        #expect(
            try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'renewed' AND notification_type = $1",
                         [SubscriptionRefresh.notificationType]) == "1"
        )

        // The missed DID_RENEW delivered late (signed before what the refresh applied) changes nothing.
        var late = SubscriptionTests.Note(type: "DID_RENEW", signedDate: Self.end, status: 1)
        late.transactionId = "2000000000000099"
        late.purchaseDate = Self.end
        late.expiresDate = Self.end + Self.period
        _ = try SubscriptionTests.deliver(h, late)
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(Self.end + Self.period))
    }

    @Test("an expiry the notification of which was missed: the refresh says expired, the chain is no longer served")
    func repairsMissedExpiry() throws {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        try h.fake.purchases.add([
            FakePurchase(
                bundleId: "com.example.app", productId: "pro.monthly", transactionId: Self.chain,
                type: "Auto-Renewable Subscription", purchaseDate: Self.start, expiresDate: Self.end
            )
        ])
        var subscribed = SubscriptionTests.Note(type: "SUBSCRIBED", subtype: "INITIAL_BUY", signedDate: Self.start, status: 1)
        subscribed.purchaseDate = Self.start
        subscribed.expiresDate = Self.end
        _ = try SubscriptionTests.deliver(h, subscribed)
        try h.fake.purchases.expire(
            originalTransactionId: Self.chain, subtype: "VOLUNTARY",
            signedDate: Date(timeIntervalSince1970: Double(Self.end) / 1000), delivered: false
        )
        let pass = try Self.refresh(h).runOnce(SubscriptionRefresh.Selection(staleHours: 0), h.db)
        #expect(pass.applied == 1)
        let row = try SubscriptionTests.subscription(h)
        #expect(row["status"] == "expired")
        #expect(row["expiration_reason"] == "voluntary")
        #expect(row["auto_renew"] == "false")
        #expect(try SubscriptionTests.events(h).contains("expired voluntary"))
        #expect(try Self.stale(h).isEmpty)
    }

    @Test("signed items that do not chain to a trusted root are not applied")
    func untrustedNotApplied() throws {
        let h = try Self.missedRenewal()
        // Trusts the test signer's root only, not the fake App Store's, which signed Apple's answer.
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [try Harness.signer.get().chain.root], onlineChecks: false)
        )
        let pass = try Self.refresh(h, verifier: verifier).runOnce(SubscriptionRefresh.Selection(staleHours: 0), h.db)
        #expect(pass.asked == 1 && pass.applied == 0 && pass.failed == 1)
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(Self.end))
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    /// A chain of Apple's answer signed by the test signer (trusted) with `change` made to the transaction or the
    /// renewal info.
    static func item(
        transaction change: (inout [String: Any]) -> Void = { _ in },
        renewal changeRenewal: (inout [String: Any]) -> Void = { _ in }, original: String? = chain
    ) throws -> SubscriptionStatusesResponse.LastTransaction {
        let signer = try Harness.signer.get()
        var transaction: [String: Any] = [
            "transactionId": "2000000000000001", "originalTransactionId": chain, "bundleId": "com.example.app",
            "productId": "pro.monthly", "purchaseDate": end, "expiresDate": end + period, "quantity": 1,
            "type": "Auto-Renewable Subscription", "environment": "Production", "signedDate": Harness.now,
        ]
        var renewal: [String: Any] = [
            "originalTransactionId": chain, "productId": "pro.monthly", "autoRenewStatus": 1,
            "environment": "Production", "signedDate": Harness.now,
        ]
        change(&transaction)
        changeRenewal(&renewal)
        return SubscriptionStatusesResponse.LastTransaction(
            originalTransactionId: original, status: 1,
            signedTransactionInfo: try signer.sign(JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])),
            signedRenewalInfo: try signer.sign(JSONSerialization.data(withJSONObject: renewal, options: [.sortedKeys]))
        )
    }

    @Test("Apple's answer must be for the chain's environment, app and purchase chain")
    func answerMustMatchChain() throws {
        let h = try Harness()
        let refresh = Self.refresh(h)
        let asked = SubscriptionRefresh.Chain(
            environment: "Production", bundleId: "com.example.app", originalTransactionId: Self.chain,
            transactionId: Self.chain
        )
        let now = Date()
        // The good one passes: the checks below fail for their own reason.
        let good = try refresh.outcome(of: try Self.item(), chain: asked, now: now)
        #expect(good.notification?.status == 1)
        #expect(good.transaction?.expiresDateMs == Self.end + Self.period)
        #expect(good.notification?.signedDateMs == Harness.now)

        let wrong: [(String, SubscriptionStatusesResponse.LastTransaction)] = [
            ("sandbox transaction", try Self.item(transaction: { $0["environment"] = "Sandbox" })),
            ("sandbox renewal", try Self.item(renewal: { $0["environment"] = "Sandbox" })),
            ("another app", try Self.item(transaction: { $0["bundleId"] = "com.example.other" })),
            ("renewal of another chain", try Self.item(renewal: { $0["originalTransactionId"] = "2000000000000777" })),
            ("answer names another chain", try Self.item(original: "2000000000000777")),
            ("renewal without signedDate", try Self.item(renewal: { $0["signedDate"] = nil })),
        ]
        for (what, item) in wrong {
            #expect(throws: SubscriptionRefresh.RefreshError.self, "\(what)") {
                try refresh.outcome(of: item, chain: asked, now: now)
            }
        }
        var unsigned = try Self.item()
        unsigned.signedRenewalInfo = nil
        #expect(throws: SubscriptionRefresh.RefreshError.self) { try refresh.outcome(of: unsigned, chain: asked, now: now) }
    }

    @Test("work refreshes a stale chain by itself (SUBSCRIPTIONS_REFRESH_MINUTES), with the Server API configured")
    func workRefreshes() throws {
        let h = try Self.missedRenewal()
        let threads = try h.startWorkers(1, serverAPI: true) { configuration in
            configuration.drain = false
            configuration.subscriptionsRefreshMinutes = 0.001
        }
        let deadline = Date(timeIntervalSinceNow: 20)
        var row = try SubscriptionTests.subscription(h)
        while row["expires_ms"] == String(Self.end), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            row = try SubscriptionTests.subscription(h)
        }
        for thread in threads { thread.worker.shutdown() }
        for thread in threads { thread.wait(seconds: 10) }
        #expect(row["status"] == "active")
        #expect(row["expires_ms"] == String(Self.end + Self.period))
    }

    @Test("SUBSCRIPTIONS_REFRESH_MINUTES 0: work has no refresher; above 0, its first pass is recorded a minute after start at most")
    func workRefreshOff() throws {
        let h = try Self.missedRenewal()
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        func worker(minutes: Double, serverAPI: Bool = true) -> Worker {
            Worker(
                configuration: Harness.configuration { $0.subscriptionsRefreshMinutes = minutes },
                databaseURL: h.databaseURL, client: h.client, signedData: h.signedData,
                serverAPI: serverAPI ? h.serverAPI : nil, logger: logger
            )
        }
        // What work decided: no refresher when the setting is 0, or without a Server API client to ask.
        #expect(worker(minutes: 0).subscriptionRefresher() == nil)
        #expect(worker(minutes: 60, serverAPI: false).subscriptionRefresher() == nil)
        // Otherwise the first pass is recorded one interval after start, or a minute when that is shorter.
        for (minutes, firstAfter) in [(0.5, 30.0), (60, 60)] {
            let before = Worker.now()
            let refresher = try #require(worker(minutes: minutes).subscriptionRefresher())
            let after = Worker.now()
            #expect(refresher.everySeconds == minutes * 60)
            #expect(refresher.nextRunAt >= before + firstAfter && refresher.nextRunAt <= after + firstAfter,
                    "\(minutes) min: next run \(refresher.nextRunAt - before) s after start")
        }
        // And a worker so configured runs, its chain left as it was.
        let threads = try h.startWorkers(1, serverAPI: true) { configuration in
            configuration.drain = false
            configuration.subscriptionsRefreshMinutes = 0
        }
        #expect(threads.allSatisfy { $0.worker.subscriptionRefresher() == nil })
        for thread in threads { _ = thread.stop(waitingUpTo: 10) }
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(Self.end))
    }

    /// The executable, as an operator runs it: a bad option is a usage error; the stale chain is repaired, and asked
    /// again (by user) nothing more happens.
    @Test("receipt-worker subscriptions-refresh repairs the chain; --stale-hours must be a number of hours")
    func executable() async throws {
        let h = try Self.missedRenewal()
        let directory = NSTemporaryDirectory() + "rw-subscriptions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let environment = ChildProcess.environment(setting: [
            "DATABASE_URL": h.databaseURL, "APPSTORE_KEY_ID": Harness.apiKeyID,
            "APPSTORE_ISSUER_ID": Harness.apiIssuerID, "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8",
            "APPSTORE_API_URL": h.fake.apiProductionURL, "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL,
            "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der", "APPSTORE_ONLINE_CHECKS": "off",
            "APPLE_BUNDLE_IDS": "com.example.app",
        ])
        let refused = try ChildProcess(["subscriptions-refresh", "--stale-hours", "-1"], environment: environment)
        #expect(await refused.exit(within: 30) == 64, "\(refused.output)")
        #expect(refused.output.contains("--stale-hours"), "\(refused.output)")

        let run = try ChildProcess(["subscriptions-refresh"], environment: environment)
        #expect(await run.exit(within: 60) == 0, "\(run.output)")
        #expect(run.output.contains("asked 1, applied 1, unchanged 0, failed 0"), "\(run.output)")
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(Self.end + Self.period))

        let again = try ChildProcess(
            ["subscriptions-refresh", "--user", "user-1"], environment: environment
        )
        #expect(await again.exit(within: 60) == 0, "\(again.output)")
        // Apple signs its answer anew: applied, and nothing changes (no second credit, no event).
        #expect(again.output.contains("asked 1, applied 1, unchanged 0, failed 0"), "\(again.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "2")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE notification_type = 'SUBSCRIPTION_STATUS'") == "1")
    }

    /// The fake App Store plays the lifecycle with no notification delivered; each refresh reads the same story from
    /// Get All Subscription Statuses.
    @Test("billing retry with grace, recovery, price increase, downgrade, retry without grace: each read by a refresh")
    func lifecycle() throws {
        let h = try Self.missedRenewal()
        let refresh = Self.refresh(h)
        let byChain = SubscriptionRefresh.Selection(originalTransactionId: Self.chain)
        func refreshed() throws -> [String: String] {
            Thread.sleep(forTimeInterval: 0.01)  // Apple's signedDate moves on between answers
            let pass = try refresh.runOnce(byChain, h.db)
            #expect(pass.asked == 1 && pass.failed == 0)
            return try SubscriptionTests.subscription(h)
        }
        let periodEnd = Self.end + Self.period
        _ = try refreshed()
        let day: Double = 86_400
        try h.fake.purchases.failRenewal(originalTransactionId: Self.chain, graceSeconds: day, delivered: false)
        var row = try refreshed()
        #expect(row["status"] == "grace_period")
        #expect(row["grace_ms"] == String(periodEnd + 86_400_000))
        #expect(try SubscriptionTests.entitlements(h) == ["pro.monthly grace_period \(periodEnd + 86_400_000)"])

        try h.fake.purchases.renew(originalTransactionId: Self.chain, delivered: false)
        row = try refreshed()
        #expect(row["status"] == "active")
        #expect(row["expires_ms"] == String(periodEnd + Self.period))

        try h.fake.purchases.priceIncrease(originalTransactionId: Self.chain, accepted: false, delivered: false)
        #expect(try refreshed()["price_increase"] == "pending")
        try h.fake.purchases.changeRenewalPreference(
            originalTransactionId: Self.chain, to: "pro.basic", upgrade: false, delivered: false
        )
        #expect(try refreshed()["auto_renew_product_id"] == "pro.basic")

        try h.fake.purchases.failRenewal(originalTransactionId: Self.chain, delivered: false)
        #expect(try refreshed()["status"] == "billing_retry")
        #expect(try SubscriptionTests.entitlements(h).isEmpty, "billing retry without grace is not served")
        let events = try SubscriptionTests.events(h)
        for kind in ["grace_period", "billing_recovered", "price_increase pending", "billing_issue billing retry"] {
            #expect(events.contains(kind), "\(events)")
        }
        #expect(events.contains { $0.hasPrefix("product_change renews to pro.basic") }, "\(events)")
    }

    @Test("one answer covers every chain of the customer: asked once per pass, both chains repaired")
    func oneAnswerPerCustomer() throws {
        let h = try Self.harness()
        let chains = ["2000000000000100", "2000000000000200"]
        try h.fake.purchases.add(chains.map {
            FakePurchase(
                bundleId: "com.example.app", productId: "pro.monthly", transactionId: $0, customerId: "c-1",
                type: "Auto-Renewable Subscription", purchaseDate: Self.start, expiresDate: Self.end
            )
        })
        for chain in chains {
            _ = try h.db.query(
                """
                INSERT INTO receipt_subscriptions (environment, original_transaction_id, bundle_id, product_id, status,
                                                   expires_at, signed_at)
                VALUES ('Production', $1, 'com.example.app', 'pro.monthly', 'active',
                        to_timestamp($2::bigint / 1000.0), to_timestamp($3::bigint / 1000.0))
                """, [chain, String(Self.end), String(Self.start)]
            )
            try h.fake.purchases.renew(
                originalTransactionId: chain, signedDate: Date(timeIntervalSince1970: Double(Self.end) / 1000),
                delivered: false
            )
        }
        let pass = try Self.refresh(h).runOnce(SubscriptionRefresh.Selection(staleHours: 0), h.db)
        #expect(pass.asked == 1 && pass.applied == 1 && pass.failed == 0)
        #expect(
            try h.scalar(
                "SELECT count(*) FROM receipt_subscriptions WHERE expires_at = to_timestamp($1::bigint / 1000.0)",
                [String(Self.end + Self.period)]
            ) == "2"
        )
        #expect(h.fake.apiStats().requests["production.subscription_statuses"] == 1, "\(h.fake.apiStats().requests)")
    }

    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        return h
    }
}
