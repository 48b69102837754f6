import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// The whole path, enqueue_receipt → claim → fake App Store over HTTP → rules → ledger → write-back, on a real
/// PostgreSQL.
@Suite("Pipeline, end to end", .serialized, .ownThread)
struct PipelineTests {
    @Test("a production purchase is verified and credited once, with one production call")
    func productionPurchase() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("1001")])
        let id = try h.enqueue(receipt, order: "order-1", transaction: "1001")
        try h.drain()
        let job = try h.job(id)
        #expect(job["state"] == "verified")
        #expect(job["environment"] == "Production")
        #expect(job["apple_status"] == "0")
        #expect(job["result"]?.contains("\"credit_key\": \"1001\"") == true)
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE transaction_id = '1001' AND job_id = $1", [String(id)]) == "1")
        let stats = h.fake.stats()
        #expect(stats.requests["production"] == 1)
        #expect(stats.requests["sandbox", default: 0] == 0)
    }

    @Test("a sandbox receipt hops once from production to the sandbox and is credited as Sandbox")
    func sandboxHop() throws {
        let h = try Harness()
        let receipt = Harness.receipt(environment: "Sandbox", purchases: [Harness.purchase("2001")])
        let id = try h.enqueue(receipt, order: "order-2")
        try h.drain()
        #expect(try h.job(id)["state"] == "verified")
        #expect(try h.job(id)["environment"] == "Sandbox")
        #expect(try h.scalar("SELECT environment FROM receipt_transactions WHERE transaction_id = '2001'") == "Sandbox")
        let stats = h.fake.stats()
        #expect(stats.requests["production"] == 1)
        #expect(stats.requests["sandbox"] == 1)
        #expect(stats.statuses["production"]?["21007"] == 1)
    }

    @Test("the same receipt replayed under a second order is rejected already_credited; the first stays credited")
    func replayUnderSecondOrder() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("3001")])
        let first = try h.enqueue(receipt, order: "order-a")
        try h.drain()
        let second = try h.enqueue(receipt, order: "order-b")
        try h.drain()
        #expect(try h.job(first)["state"] == "verified")
        #expect(try h.job(second)["state"] == "rejected")
        #expect(try h.job(second)["reason"] == "already_credited")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    @Test("a purchase chain presented for another user is rejected owned_by_other_user")
    func ownedByOtherUser() throws {
        let h = try Harness()
        let first = try h.enqueue(
            Harness.receipt(purchases: [Harness.purchase("4001", original: "4000")]), order: "o-1", user: "alice"
        )
        try h.drain()
        // A renewal in the same chain, not credited yet, sent in by someone else.
        let second = try h.enqueue(
            Harness.receipt(purchases: [Harness.purchase("4002", original: "4000", agoMs: 1000)]), order: "o-2", user: "mallory"
        )
        try h.drain()
        #expect(try h.job(first)["state"] == "verified")
        #expect(try h.job(second)["reason"] == "owned_by_other_user")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE user_id = 'mallory'") == "0")
    }

    @Test("without a client transaction id, the newest uncredited purchase of the product is credited")
    func newestUncredited() throws {
        let h = try Harness()
        let purchases = [
            Harness.purchase("5001", product: "coins", agoMs: 3_000), Harness.purchase("5002", product: "coins", agoMs: 2_000),
            Harness.purchase("5003", product: "other", agoMs: 1_000),
        ]
        let receipt = Harness.receipt(purchases: purchases)
        let a = try h.enqueue(receipt, order: "c-1", product: "coins")
        try h.drain()
        let b = try h.enqueue(receipt, order: "c-2", product: "coins")
        try h.drain()
        let c = try h.enqueue(receipt, order: "c-3", product: "coins")
        try h.drain()
        #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE job_id = $1", [String(a)]) == "5002")
        #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE job_id = $1", [String(b)]) == "5001")
        #expect(try h.job(c)["reason"] == "already_credited")
    }

    @Test("re-verifying an order whose purchase the ledger already holds for that order is verified, not already_credited")
    func sameOrderIsIdempotent() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("6001")])
        let first = try h.enqueue(receipt, order: "same")
        try h.drain()
        // An operator requeues the verified order's job by hand (simulated: a rejected copy of the same order).
        _ = try h.db.query("UPDATE receipt_jobs SET state = 'rejected', reason = 'expired' WHERE id = $1", [String(first)])
        let again = try h.enqueue(receipt, order: "same")
        #expect(again != first)
        try h.drain()
        #expect(try h.job(again)["state"] == "verified")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    @Test("a refund seen later revokes the credited purchase and announces it")
    func refundRevokes() throws {
        let h = try Harness()
        let listener = try PostgresConnection(h.databaseURL)
        try listener.listen("receipt_revocations")
        let credited = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("7001")]), order: "r-1")
        try h.drain()
        #expect(try h.job(credited)["state"] == "verified")
        let refunded = try h.enqueue(
            Harness.receipt(purchases: [Harness.purchase("7001", cancelled: true)]), order: "r-2", transaction: "7001"
        )
        try h.drain()
        #expect(try h.job(refunded)["reason"] == "refunded")
        #expect(try h.scalar("SELECT revoked_at IS NOT NULL FROM receipt_transactions WHERE transaction_id = '7001'") == "t")
        // The ledger row's id alone: the listener re-reads the row.
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions WHERE transaction_id = '7001'"))
        let payloads = try h.notificationsSoFar(on: listener, channel: "receipt_revocations")
        #expect(payloads == [#"{"ledger_id" : \#(ledger)}"#], "\(payloads)")
    }

    @Test("rules reject what they must: bundle, product, transaction, expiry, sandbox policy")
    func rejections() throws {
        let h = try Harness()
        let expired = Harness.purchase("8004", expiresInMs: -3_600_000)
        let cases: [(String, String, String?, String, String)] = [
            (Harness.receipt(bundle: "com.someone.else", purchases: [Harness.purchase("8001")]), "pro.monthly", nil, "com.example.app", "bundle_mismatch"),
            (Harness.receipt(purchases: [Harness.purchase("8002", product: "coins")]), "pro.monthly", "8002", "com.example.app", "product_mismatch"),
            (Harness.receipt(purchases: [Harness.purchase("8003")]), "pro.monthly", "9999", "com.example.app", "transaction_not_found"),
            (Harness.receipt(purchases: [expired]), "pro.monthly", "8004", "com.example.app", "expired"),
            (Harness.receipt(purchases: [Harness.purchase("8005")], status: 21003), "pro.monthly", nil, "com.example.app", "invalid_receipt"),
        ]
        var ids: [(Int64, String)] = []
        for (index, item) in cases.enumerated() {
            ids.append((try h.enqueue(item.0, order: "rej-\(index)", product: item.1, transaction: item.2, bundle: item.3), item.4))
        }
        try h.drain()
        for (id, reason) in ids {
            #expect(try h.job(id)["state"] == "rejected", "job \(id)")
            #expect(try h.job(id)["reason"] == reason, "job \(id)")
        }
    }

    @Test("SANDBOX_POLICY=reject refuses sandbox purchases; production ones still pass")
    func sandboxPolicyReject() throws {
        let h = try Harness()
        let sandbox = try h.enqueue(Harness.receipt(environment: "Sandbox", purchases: [Harness.purchase("9001")]), order: "s-1")
        let production = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("9002")]), order: "s-2")
        try h.drain { $0.rules.sandboxPolicy = .reject }
        #expect(try h.job(sandbox)["reason"] == "sandbox_not_allowed")
        #expect(try h.job(production)["state"] == "verified")
    }

    @Test("an empty purchase list is retried briefly, then rejected no_purchases")
    func noPurchases() throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.receipt(purchases: []), order: "empty")
        try h.drain()
        #expect(try h.job(id)["reason"] == "no_purchases")
        #expect(try h.job(id)["attempts"] == "3")
    }
}
