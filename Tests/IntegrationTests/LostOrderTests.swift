import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// Issue 37, lost orders: a purchase Apple announces reaches its customer whether or not the app ever sends it,
/// through the token the app gave StoreKit (register_account_token, expect_purchase), or support's claim; and
/// whatever arrives first, it is credited once. Signed at test time, through the workers, real PostgreSQL.
@Suite("Lost orders: purchases Apple announces", .serialized, .ownThread)
struct LostOrderTests {
    static let alice = "5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c01"
    static let unknown = "0f6f8d1c-2b7e-4d7a-8d3c-1a2b3c4d5e6f"

    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        return h
    }

    /// A ONE_TIME_CHARGE of a consumable, as Apple signs it.
    static func charge(_ transactionId: String, token: String?, product: String = "coins.100") throws -> String {
        var transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": "com.example.app",
            "productId": product, "purchaseDate": Harness.now - 60_000, "quantity": 1, "type": "Consumable",
            "price": 990, "currency": "USD", "storefront": "USA",
        ]
        transaction["appAccountToken"] = token
        return try NotificationTests.Note(type: "ONE_TIME_CHARGE", transaction: transaction).signed()
    }

    static func apply(_ h: Harness, _ payload: String) throws -> String? {
        let id = try NotificationTests.receive(h, payload)
        try h.drain()
        return try NotificationTests.state(h, id)
    }

    static func ledger(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT transaction_id || ' ' || user_id || ' ' || coalesce(order_id, '-') FROM receipt_transactions ORDER BY id"
        ).rows.map { $0[0] ?? "" }
    }

    static func sqlState(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as PostgresError {
            return error.sqlState
        } catch {
            return "\(error)"
        }
    }

    @Test("a charge with a registered token and no job: credited once to the token's customer as order apple:<id>")
    func announcedToRegisteredToken() throws {
        let h = try Self.harness()
        #expect(try h.scalar("SELECT register_account_token('alice', $1)", [Self.alice]) == "0")
        let charge = try Self.charge("3000000000000101", token: Self.alice)
        #expect(try Self.apply(h, charge) == "applied")
        #expect(try Self.ledger(h) == ["3000000000000101 alice apple:3000000000000101"])
        let job = try h.db.query(
            "SELECT state, kind, user_id, result->>'source', result->'credited'->>'transaction_id', finished_at IS NOT NULL "
                + "FROM receipt_jobs"
        ).rows
        #expect(job.map { $0.map { $0 ?? "" } } == [["verified", "announced", "alice", "notification", "3000000000000101", "t"]])
        #expect(try NotificationTests.events(h) == ["credited alice apple:3000000000000101"])
        // Apple's retry of the same notification (the same row), and another notification of the same purchase.
        #expect(try Self.apply(h, charge) == "applied")
        #expect(try Self.apply(h, try Self.charge("3000000000000101", token: Self.alice)) == "applied")
        #expect(try Self.ledger(h).count == 1)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
    }

    @Test("an expected order is verified by its purchase's notification; the same call returns the same job")
    func expectedOrderVerified() throws {
        let h = try Self.harness()
        let id = try #require(
            try h.scalar("SELECT expect_purchase('o-1', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice])
        )
        #expect(try h.scalar("SELECT expect_purchase('o-1', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice]) == id)
        #expect(try h.scalar("SELECT state || ' ' || kind || ' ' || (run_at > now() + interval '71 hours')::text FROM receipt_jobs") == "queued expected true")
        #expect(try h.scalar("SELECT jobs FROM receipt_queue_summary WHERE state = 'expected'") == "1")
        #expect(try h.scalar("SELECT jobs FROM receipt_queue_summary WHERE state = 'queued'") == "0")
        // Another product's charge with the same token does not complete it.
        #expect(try Self.apply(h, try Self.charge("3000000000000201", token: Self.alice, product: "coins.500")) == "applied")
        #expect(try h.job(Int64(id)!)["state"] == "queued")
        #expect(try Self.apply(h, try Self.charge("3000000000000202", token: Self.alice)) == "applied")
        let job = try h.job(Int64(id)!)
        #expect(job["state"] == "verified", "\(job)")
        #expect(try Self.ledger(h) == [
            "3000000000000201 alice apple:3000000000000201", "3000000000000202 alice o-1",
        ])
    }

    @Test("an expected order nobody paid for is rejected not_purchased at its deadline, by the sweep")
    func expectedOrderExpires() throws {
        let h = try Self.harness()
        let id = try #require(
            try h.scalar("SELECT expect_purchase('o-2', 'alice', 'coins.100', $1, 'com.example.app', interval '1 minute')", [Self.alice])
        )
        _ = try h.db.query("SELECT * FROM receipt_sweep(5)")
        #expect(try h.job(Int64(id)!)["state"] == "queued", "not before its deadline")
        _ = try h.db.query("UPDATE receipt_jobs SET run_at = now() - interval '1 second' WHERE id = $1", [id])
        // A worker never claims it, even when due.
        try h.drain()
        #expect(try h.job(Int64(id)!)["attempts"] == "0")
        _ = try h.db.query("SELECT * FROM receipt_sweep(5)")
        let job = try h.job(Int64(id)!)
        #expect(job["state"] == "rejected", "\(job)")
        #expect(job["reason"] == "not_purchased", "\(job)")
        #expect(job["finished"] == "true")
    }

    @Test("a purchase with an unknown token waits in receipt_unclaimed_purchases until its token is registered")
    func unclaimedThenRegistered() throws {
        let h = try Self.harness()
        #expect(try Self.apply(h, try Self.charge("3000000000000301", token: Self.unknown)) == "applied")
        #expect(try Self.ledger(h).isEmpty)
        #expect(
            try h.scalar("SELECT transaction_id || ' ' || app_account_token || ' ' || price || ' ' || source FROM receipt_unclaimed_purchases")
                == "3000000000000301 \(Self.unknown) 0.990 notification"
        )
        #expect(try h.scalar("SELECT register_account_token('bob', $1)", [Self.unknown]) == "1")
        #expect(try Self.ledger(h) == ["3000000000000301 bob apple:3000000000000301"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "0")
        #expect(try h.scalar("SELECT reason FROM receipt_events WHERE kind = 'credited'") == "token")
    }

    @Test("a purchase without a token is claimed by support for a customer; a second claim is refused, nothing changed")
    func claimedBySupport() throws {
        let h = try Self.harness()
        #expect(try Self.apply(h, try Self.charge("3000000000000401", token: nil)) == "applied")
        let job = try #require(try h.scalar("SELECT claim_purchase('3000000000000401', 'carol', 'ticket-7')"))
        #expect(try h.job(Int64(job)!)["state"] == "verified")
        #expect(try Self.ledger(h) == ["3000000000000401 carol ticket-7"])
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase('3000000000000401', 'dave')") } == "RW409")
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase('3999999999999999', 'dave')") } == "P0002")
        #expect(try Self.ledger(h).count == 1)
    }

    @Test("bad input: another customer's token, an unknown bundle, a deadline out of range, an order id of another product")
    func badInput() throws {
        let h = try Self.harness()
        _ = try h.db.query("SELECT register_account_token('alice', $1)", [Self.alice])
        #expect(Self.sqlState { _ = try h.db.query("SELECT register_account_token('mallory', $1)", [Self.alice]) } == "RW409")
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT register_account_token('alice', $1, 'com.other.app')", [Self.unknown])
        } == "22023")
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.100', $1, 'com.example.app', interval '1 second')", [Self.alice])
        } == "22023")
        _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice])
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.500', $1, 'com.example.app')", [Self.alice])
        } == "RW409")
        #expect(try h.scalar("SELECT user_id FROM receipt_account_tokens WHERE app_account_token = $1", [Self.alice]) == "alice")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
    }
}
