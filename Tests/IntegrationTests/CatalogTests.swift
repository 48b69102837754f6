import AppStoreModel
import Foundation
import ReceiptQueue
import Testing

/// Credit keys from the optional receipt_products catalog: restores and renewals cannot pay twice.
@Suite("Credit keys and the product catalog", .serialized, .ownThread)
struct CatalogTests {
    @Test("a restored non-consumable (new transaction id, same original) cannot be credited to a second order")
    func nonConsumableRestore() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('lifetime', 'non_consumable')")
        let original = Harness.purchase("n-100", product: "lifetime", original: "n-100", agoMs: 86_400_000)
        let first = try h.enqueue(Harness.receipt(purchases: [original]), order: "buy", product: "lifetime")
        try h.drain()
        let restored = Harness.purchase("n-200", product: "lifetime", original: "n-100", agoMs: 1_000)
        let second = try h.enqueue(Harness.receipt(purchases: [restored]), order: "restore", product: "lifetime")
        try h.drain()
        #expect(try h.job(first)["state"] == "verified")
        #expect(try h.scalar("SELECT credit_key FROM receipt_transactions WHERE job_id = $1", [String(first)]) == "n-100")
        #expect(try h.job(second)["reason"] == "already_credited")
    }

    @Test("an auto-renewable period is credited once per web_order_line_item_id, each renewal once")
    func autoRenewablePeriods() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        func period(_ transaction: String, _ lineItem: String, agoMs: Int64) -> InAppTransaction {
            var purchase = Harness.purchase(transaction, original: "s-1", agoMs: agoMs, expiresInMs: 20 * 86_400_000)
            purchase.webOrderLineItemId = lineItem
            return purchase
        }
        let january = try h.enqueue(
            Harness.receipt(purchases: [period("s-1", "w-1", agoMs: 5_000)]), order: "jan", transaction: "s-1"
        )
        try h.drain()
        // The same period restored under a new transaction id, presented for another order: already credited.
        let restore = try h.enqueue(
            Harness.receipt(purchases: [period("s-9", "w-1", agoMs: 1_000)]), order: "jan-restore", transaction: "s-9"
        )
        // The next period is a new credit.
        let february = try h.enqueue(
            Harness.receipt(purchases: [period("s-2", "w-2", agoMs: 2_000)]), order: "feb", transaction: "s-2"
        )
        try h.drain()
        #expect(try h.job(january)["state"] == "verified")
        #expect(try h.job(restore)["reason"] == "already_credited")
        #expect(try h.job(february)["state"] == "verified")
        #expect(try h.scalar("SELECT string_agg(credit_key, ',' ORDER BY credit_key) FROM receipt_transactions") == "wol:w-1,wol:w-2")
    }
}
