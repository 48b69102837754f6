import Foundation
import Testing

/// What the API layer reads about a verdict, and the order of the ledger's checks, end to end.
@Suite("Verdict details: the ledger's order of checks, expiry dates", .serialized, .ownThread)
struct VerdictDetailsTests {
    /// Rule 5: for each candidate, the key's holder is checked before the chain's owner.
    @Test("a purchase credited to another user's order is already_credited; their chain's next purchase is owned_by_other_user")
    func alreadyCreditedBeforeOwnedByOtherUser() throws {
        let h = try Harness()
        let first = Harness.purchase("oc-1", original: "oc-0", agoMs: 120_000)
        let renewal = Harness.purchase("oc-2", original: "oc-0", agoMs: 60_000)
        let alice = try h.enqueue(Harness.receipt(purchases: [first]), order: "alice-1", user: "alice")
        try h.drain()
        #expect(try h.job(alice)["state"] == "verified")
        // The same purchase for bob: both its key (held by alice-1) and its chain (alice's) stand in the way; the
        // key is checked first.
        let replay = try h.enqueue(Harness.receipt(purchases: [first]), order: "bob-1", user: "bob", transaction: "oc-1")
        // A purchase of alice's chain that nobody was credited for: only the owner stands in the way.
        let chain = try h.enqueue(Harness.receipt(purchases: [renewal]), order: "bob-2", user: "bob", transaction: "oc-2")
        try h.drain()
        #expect(try h.job(replay)["reason"] == "already_credited", "\((try? h.job(replay)) ?? [:])")
        #expect(try h.job(chain)["reason"] == "owned_by_other_user", "\((try? h.job(chain)) ?? [:])")
        #expect(try h.scalar("SELECT string_agg(order_id, ',') FROM receipt_transactions") == "alice-1")
    }

    @Test("a subscription's expires_date reaches the ledger and the verdict's result, to the millisecond")
    func expiresDate() throws {
        let h = try Harness()
        let purchase = Harness.purchase("exp-1", expiresInMs: 30 * 86_400_000 + 123)
        let expires = try #require(purchase.expiresDateMs)
        let id = try h.enqueue(Harness.receipt(purchases: [purchase]), order: "subscription")
        try h.drain()
        #expect(try h.job(id)["state"] == "verified")
        let ledger = try h.scalar(
            "SELECT round(extract(epoch FROM expires_date) * 1000)::bigint FROM receipt_transactions WHERE job_id = $1",
            [String(id)]
        )
        #expect(ledger == String(expires))
        let result = try h.scalar("SELECT result->'credited'->>'expires_date_ms' FROM receipt_jobs WHERE id = $1", [String(id)])
        #expect(result == String(expires))
        // A purchase that does not expire has none.
        let coins = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("exp-2", product: "coins")]), order: "coins", product: "coins")
        try h.drain()
        #expect(try h.scalar("SELECT expires_date IS NULL FROM receipt_transactions WHERE job_id = $1", [String(coins)]) == "t")
    }
}
