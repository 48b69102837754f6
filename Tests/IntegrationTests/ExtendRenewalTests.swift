#if os(Linux)
import AppStoreClient
import AppStoreModel
import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// `receipt-worker extend-renewal` (issue 38): the built binary against a real PostgreSQL and the fake App Store over
/// libcurl; each request recorded, Apple's RENEWAL_EXTENDED notifications moving the periods' expiry in the ledger and
/// receipt_entitlements, the RENEWAL_EXTENSION SUMMARY completing a mass request.
@Suite("extend-renewal: Apple's renewal-date extensions, recorded, and their notifications applied", .serialized, .ownThread)
struct ExtendRenewalTests {
    static let day: Int64 = 86_400_000

    /// A harness with pro.monthly an auto-renewable subscription, and one subscriber per storefront given, each
    /// credited to user-N through its signed transaction from the fake; returns the chains' ids.
    static func subscribers(_ storefronts: [String]) throws -> (Harness, [String]) {
        let h = try NotificationTypesTests.harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        var chains: [String] = []
        for (index, storefront) in storefronts.enumerated() {
            let added = try h.fake.purchases.add([
                FakePurchase(
                    bundleId: "com.example.app", productId: "pro.monthly", type: "Auto-Renewable Subscription",
                    purchaseDate: Harness.now - 60_000, expiresDate: Harness.now + 30 * day, storefront: storefront
                )
            ])
            _ = try SignedTransactionTests.enqueue(
                h, added[0].signedTransaction, order: "o-\(index)", user: "user-\(index)"
            )
            chains.append(added[0].transactionId)
        }
        // The fake's production notifications carry its own app id for the bundle.
        let made = try #require(h.fake.purchases.notifications.last?.signedPayload)
        _ = try h.db.query(
            "UPDATE receipt_apps SET app_apple_id = $1",
            [try #require(try NotificationTests.appAppleId(of: made)).description]
        )
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_subscriptions") == String(storefronts.count))
        return (h, chains)
    }

    /// Delivers every notification the fake made after the first `skip` through receive_notification(), and applies
    /// them; returns their states.
    static func deliver(_ h: Harness, after skip: Int) throws -> [String] {
        let made = h.fake.purchases.notifications.dropFirst(skip)
        let ids = try made.map { try NotificationTests.receive(h, $0.signedPayload) }
        try h.drain()
        return try ids.map { try NotificationTests.state(h, $0) ?? "none" }
    }

    static func run(_ arguments: [String], _ environment: [String: String]) async throws
        -> (status: Int32?, output: String, errors: String)
    {
        let child = try ChildProcess(["extend-renewal"] + arguments, environment: environment, separateErrors: true)
        let status = await child.exit(within: 60)
        return (status, child.output, child.errors)
    }

    static func expiry(_ h: Harness, _ chain: String) throws -> String? {
        try h.scalar(
            "SELECT (extract(epoch FROM expires_date) * 1000)::bigint FROM receipt_transactions "
                + "WHERE original_transaction_id = $1",
            [chain]
        )
    }

    @Test("one chain: Apple extends it, the request is recorded, RENEWAL_EXTENDED moves the ledger and the entitlement")
    func extendOne() async throws {
        let (h, chains) = try Self.subscribers(["USA"])
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try SetAccountTokenTests.environment(h, directory: directory)
        let before = try #require(try Self.expiry(h, chains[0]).flatMap { Int64($0) })
        let made = h.fake.purchases.notifications.count

        let done = try await Self.run(
            ["--original-transaction-id", chains[0], "--days", "7", "--reason", "customer-satisfaction", "--json"],
            environment
        )
        #expect(done.status == 0, "\(done.output) \(done.errors)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(done.output.utf8)) as? [String: Any])
        #expect(document["state"] as? String == "extended", "\(document)")
        let requestId = try #require(document["request_identifier"] as? String)
        #expect(
            try h.scalar(
                "SELECT scope || ' ' || environment || ' ' || original_transaction_id || ' ' || extend_by_days || ' ' "
                    + "|| extend_reason_code || ' ' || state || ' ' || (requested_by = session_user) || ' ' "
                    + "|| (effective_at IS NOT NULL) FROM receipt_renewal_extensions WHERE request_identifier = $1",
                [requestId]
            ) == "one Production \(chains[0]) 7 1 extended true true"
        )
        #expect(h.fake.apiStats().count("production.extend_renewal_date", "200") == 1)

        // Apple's RENEWAL_EXTENDED: the period's expiry moves in the ledger (recorded), the subscription and the
        // entitlement follow, one event.
        #expect(try Self.deliver(h, after: made) == ["applied"])
        #expect(try Self.expiry(h, chains[0]) == String(before + 7 * Self.day))
        #expect(
            try h.scalar(
                "SELECT (extract(epoch FROM expires_before) * 1000)::bigint || ' ' "
                    + "|| (extract(epoch FROM expires_after) * 1000)::bigint FROM receipt_period_extensions"
            ) == "\(before) \(before + 7 * Self.day)"
        )
        #expect(
            try h.scalar(
                "SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM receipt_entitlements WHERE user_id = 'user-0'"
            ) == String(before + 7 * Self.day)
        )
        #expect(
            try h.scalar("SELECT string_agg(kind || ' ' || user_id, ', ') FROM receipt_events WHERE kind = 'renewal_extended'")
                == "renewal_extended user-0"
        )
    }

    @Test("bad input: days out of range, a bad reason, an unknown product or chain: exit 2 naming the fix, nothing sent")
    func badInput() async throws {
        let (h, chains) = try Self.subscribers(["USA"])
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try SetAccountTokenTests.environment(h, directory: directory)
        let cases: [([String], String)] = [
            (["--original-transaction-id", chains[0], "--days", "91", "--reason", "1"], "give 1 to 90"),
            (["--original-transaction-id", chains[0], "--days", "0", "--reason", "1"], "give 1 to 90"),
            (["--original-transaction-id", chains[0], "--days", "7", "--reason", "4"], "3 service-issue"),
            (["--original-transaction-id", chains[0], "--days", "7", "--reason", "sorry"], "3 service-issue"),
            (["--all", "--product", "nope.monthly", "--days", "7", "--reason", "0"],
             "list it in receipt_products with kind auto_renewable"),
            (["--all", "--product", "pro.monthly", "--days", "7", "--reason", "0", "--storefront", "US"], "alpha-3"),
            (["--original-transaction-id", "9999999999", "--days", "7", "--reason", "0"], "subscriptions-refresh"),
            (["--days", "7", "--reason", "0"], "give one of"),
        ]
        for (arguments, fix) in cases {
            let refused = try await Self.run(arguments, environment)
            #expect(refused.status == 2, "\(arguments): \(refused.output) \(refused.errors)")
            #expect(refused.errors.contains(fix), "\(arguments): \(refused.errors)")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_renewal_extensions") == "0")
        #expect(h.fake.apiStats().requests.keys.filter { $0.contains("extend") }.isEmpty)
    }

    @Test("all subscribers of a product in one storefront: pending, RENEWAL_EXTENDED for each, SUMMARY completes it; --status")
    func extendAll() async throws {
        let (h, chains) = try Self.subscribers(["USA", "GBR"])
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try SetAccountTokenTests.environment(h, directory: directory)
        let usa = try #require(try Self.expiry(h, chains[0]).flatMap { Int64($0) })
        let gbr = try Self.expiry(h, chains[1])
        let made = h.fake.purchases.notifications.count

        let done = try await Self.run(
            ["--all", "--product", "pro.monthly", "--days", "5", "--reason", "3", "--storefront", "usa", "--json"],
            environment
        )
        #expect(done.status == 0, "\(done.output) \(done.errors)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(done.output.utf8)) as? [String: Any])
        #expect(document["state"] as? String == "pending", "\(document)")
        let requestId = try #require(document["request_identifier"] as? String)
        #expect(
            try h.scalar(
                "SELECT scope || ' ' || product_id || ' ' || array_to_string(storefront_country_codes, ',') || ' ' "
                    + "|| state FROM receipt_renewal_extensions"
            ) == "mass pro.monthly USA pending"
        )

        // Apple's notifications: one RENEWAL_EXTENDED (the USA subscriber), then the SUMMARY.
        #expect(try Self.deliver(h, after: made) == ["applied", "applied"])
        #expect(try Self.expiry(h, chains[0]) == String(usa + 5 * Self.day))
        #expect(try Self.expiry(h, chains[1]) == gbr)
        #expect(
            try h.scalar(
                "SELECT state || ' ' || succeeded_count || ' ' || failed_count || ' ' || (summary_notification_id IS NOT NULL) "
                    + "FROM receipt_renewal_extensions"
            ) == "complete 1 0 true"
        )
        #expect(
            try h.scalar("SELECT reason FROM receipt_events WHERE kind = 'renewal_extension_summary'")
                == "request \(requestId): 1 succeeded, 0 failed"
        )

        let status = try await Self.run(["--status", requestId, "--product", "pro.monthly", "--json"], environment)
        #expect(status.status == 0, "\(status.output) \(status.errors)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])
        #expect(answer["state"] as? String == "complete")
        #expect(answer["succeeded_count"] as? Int == 1)
        #expect(answer["failed_count"] as? Int == 0)
        // A request Apple does not know: exit 1 with Apple's error.
        let unknown = try await Self.run(["--status", "no-such-request", "--product", "pro.monthly"], environment)
        #expect(unknown.status == 1, "\(unknown.output) \(unknown.errors)")
        #expect(unknown.output.contains("4000011"), "\(unknown.output)")
    }

    @Test("Apple refuses an expired subscription (4030004): recorded refused, exit 1")
    func refused() async throws {
        let (h, chains) = try Self.subscribers(["USA"])
        let directory = try SetAccountTokenTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try SetAccountTokenTests.environment(h, directory: directory)
        try h.fake.purchases.expire(originalTransactionId: chains[0])
        let done = try await Self.run(["--original-transaction-id", chains[0], "--days", "3", "--reason", "2"], environment)
        #expect(done.status == 1, "\(done.output) \(done.errors)")
        #expect(done.output.contains("4030004"), "\(done.output)")
        #expect(try h.scalar("SELECT state || ' ' || (error LIKE '%4030004%') FROM receipt_renewal_extensions") == "refused true")
    }

    @Test("the client and the fake: Apple's errors for days, reason and chain, and a request id sent again changes nothing")
    func clientAndFake() throws {
        let (h, chains) = try Self.subscribers(["USA"])
        let before = h.fake.purchases.notifications.count
        for (days, reason, code) in [(91, 1, 4000009), (0, 1, 4000009), (7, 4, 4000010)] {
            let (answer, calls) = h.serverAPI.extendRenewalDate(
                originalTransactionId: chains[0],
                RenewalExtension.Request(extendByDays: days, extendReasonCode: reason, requestIdentifier: "r-\(days)"),
                bundleId: "com.example.app", environment: .production
            )
            guard case .rejected(let failure) = answer else {
                Issue.record("\(days) days, reason \(reason): expected rejected, got \(answer)")
                continue
            }
            #expect(failure.appleStatus == code)
            #expect(calls.count == 1)
        }
        let (unknown, asked) = h.serverAPI.extendRenewalDate(
            originalTransactionId: "9999999999999999",
            RenewalExtension.Request(extendByDays: 7, extendReasonCode: 1, requestIdentifier: "r-unknown"),
            bundleId: "com.example.app"
        )
        guard case .notFound = unknown else {
            Issue.record("an unknown chain: expected notFound, got \(unknown)")
            return
        }
        #expect(asked.count == 2, "production, then the sandbox")
        let request = RenewalExtension.Request(extendByDays: 7, extendReasonCode: 1, requestIdentifier: "r-once")
        let first = h.serverAPI.extendRenewalDate(
            originalTransactionId: chains[0], request, bundleId: "com.example.app", environment: .production
        ).0
        let again = h.serverAPI.extendRenewalDate(
            originalTransactionId: chains[0], request, bundleId: "com.example.app", environment: .production
        ).0
        #expect(first.value?.success == true)
        #expect(again.value == first.value)
        #expect(h.fake.purchases.notifications.count == before + 1, "one RENEWAL_EXTENDED")
    }

    @Test("the ledger's expiry moves only through an extension, later never earlier, a revoked period never")
    func ledgerGuard() throws {
        let h = try NotificationTests.subscribed()
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions"))
        // Not through the function: refused, whoever asks.
        #expect(throws: PostgresError.self) {
            try h.db.query("UPDATE receipt_transactions SET expires_date = expires_date + interval '1 day'")
        }
        let base = try #require(try h.scalar(
            "SELECT (extract(epoch FROM expires_date) * 1000)::bigint FROM receipt_transactions"
        ).flatMap { Int64($0) })
        func extended(_ expires: Int64, signed: Int64) throws -> String {
            var period: [String: Any] = [
                "transactionId": "2000000000000000", "originalTransactionId": "2000000000000000",
                "bundleId": "com.example.app", "productId": "pro.monthly", "purchaseDate": Harness.now - 60_000,
                "expiresDate": expires, "quantity": 1, "type": "Auto-Renewable Subscription",
            ]
            period["storefront"] = "USA"
            let note = NotificationTests.Note(type: "RENEWAL_EXTENDED", signedDate: signed, transaction: period)
            let id = try NotificationTests.receive(h, try note.signed())
            try h.drain()
            return try NotificationTests.state(h, id) ?? "none"
        }
        #expect(try extended(base + 10 * Self.day, signed: Harness.now + 2000) == "applied")
        // An older extension delivered late does not shorten it.
        #expect(try extended(base + 3 * Self.day, signed: Harness.now + 1000) == "applied")
        #expect(try h.scalar("SELECT (extract(epoch FROM expires_date) * 1000)::bigint FROM receipt_transactions") == String(base + 10 * Self.day))
        #expect(try h.scalar("SELECT count(*) FROM receipt_period_extensions WHERE ledger_id = $1", [ledger]) == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'renewal_extended'") == "1")
        // A change that disagrees with the newest entry is refused too.
        #expect(throws: PostgresError.self) {
            try h.db.query("UPDATE receipt_transactions SET expires_date = expires_date + interval '1 day'")
        }
    }
}
#endif
