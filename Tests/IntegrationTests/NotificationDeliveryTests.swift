#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import ReceiptQueue
import Testing

/// The whole path as in production: the fake App Store posts signed notifications to the real
/// `receipt-worker notifications` process, which stores them; the workers verify them against the fake's chain and
/// apply them to the ledger, with one event each for the API layer.
@Suite("Notifications delivered by the fake App Store through the receiver", .serialized, .ownThread)
struct NotificationDeliveryTests {
    @Test("a purchase verified, then REFUND delivered twice and REFUND_REVERSED, then DID_RENEW; a forged reversal refused")
    func delivered() throws {
        let h = try Harness()
        let receiver = try Receiver(databaseURL: h.databaseURL)
        defer { receiver.child.signal(SIGKILL) }
        let url = "http://127.0.0.1:\(receiver.port)/apple"
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")

        // A subscription bought and verified through its transaction id.
        let now = Harness.now
        let added = try h.fake.purchases.add([FakePurchase(
            bundleId: "com.example.app", productId: "pro.monthly", type: "Auto-Renewable Subscription",
            purchaseDate: now - 60_000, expiresDate: now + 30 * 86_400_000
        )])
        let transaction = added[0].transactionId
        _ = try ServerAPITests.enqueueTransaction(h, transaction, order: "o-1", user: "user-1")
        try h.drain(serverAPI: true)
        #expect(try h.scalar("SELECT state FROM receipt_jobs") == "verified")

        // The fake's production notifications carry its app id for the bundle.
        let refund = try h.fake.purchases.refund(transactionId: transaction, reason: 1)
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [
            try #require(try NotificationTests.appAppleId(of: refund.signedPayload)).description,
        ])
        #expect(try h.fake.deliver(refund, to: url).delivered)
        #expect(try h.fake.deliver(refund, to: url).delivered, "Apple's retry of the same delivery")
        try h.drain()
        #expect(try h.scalar("SELECT revoked_at IS NOT NULL FROM receipt_transactions WHERE transaction_id = $1", [transaction]) == "t")

        // A forged reversal claiming the refund's UUID, then the real reversal.
        let reversal = try h.fake.purchases.reverseRefund(transactionId: transaction)
        let forged = try h.fake.purchases.forged(reversal)
        #expect(try h.fake.deliver(forged, to: url).delivered)
        #expect(try h.fake.deliver(reversal, to: url).delivered)
        try h.drain()
        #expect(try h.scalar("SELECT revoked_at IS NULL FROM receipt_transactions WHERE transaction_id = $1", [transaction]) == "t")

        let renewal = try h.fake.purchases.renew(originalTransactionId: transaction)
        #expect(try h.fake.deliver(renewal, to: url).delivered)
        try h.drain()

        #expect(try NotificationTests.events(h) == ["revoked user-1 o-1", "reinstated user-1 o-1", "renewed user-1 -"])
        let states = try h.db.query(
            "SELECT state || coalesce(':' || reason, '') AS s, count(*)::text AS n FROM receipt_notifications GROUP BY 1 ORDER BY 1"
        ).rows.map { "\($0[0] ?? "") \($0[1] ?? "")" }
        #expect(states == ["applied 3", "rejected:invalid_signature 1"], "the same bytes twice are one row")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE user_id = 'user-1' AND order_id IS NULL") == "1")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")
    }
}
#endif
