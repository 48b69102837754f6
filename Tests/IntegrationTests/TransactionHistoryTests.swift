import AppReceipt
import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// Issue 38: a receipt read through the App Store Server API (`RECEIPT_SOURCE=api`) asks the customer's Transaction
/// History for what its verdict needs, newest first, and never decides from a history the page cap cut short. The
/// customer here is a heavy buyer: 3,000 finished consumables, which Apple's v2 history lists, in Apple's pages of 20.
@Suite("Transaction History: what a receipt job asks of a heavy buyer's history", .serialized, .ownThread)
struct TransactionHistoryTests {
    static let chain = Result { try ReceiptSigningChain() }
    static let bought = 3000
    static let minute: Int64 = 60_000

    /// A world whose fake holds `bought` coins.100 purchases of one customer, one every ten minutes back from ten
    /// minutes ago, and one more a minute ago (the newest), with Apple's page size.
    struct World {
        let h: Harness
        let newest: SignedPurchase
        let oldest: SignedPurchase
        let nowMs: Int64

        init() throws {
            var fake = FakeAppStoreConfiguration()
            fake.apiPageSize = 20
            h = try Harness(fakeConfiguration: fake)
            nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            let now = nowMs
            let older = (0..<TransactionHistoryTests.bought).reversed().map { index in
                FakePurchase(
                    bundleId: "com.example.app", productId: "coins.100", customerId: "heavy", type: "Consumable",
                    purchaseDate: now - Int64(index + 1) * 10 * TransactionHistoryTests.minute
                )
            }
            let added = try h.fake.purchases.add(older)
            oldest = added[0]
            newest = try h.fake.purchases.add([
                FakePurchase(
                    bundleId: "com.example.app", productId: "coins.100", customerId: "heavy", type: "Consumable",
                    purchaseDate: now - TransactionHistoryTests.minute
                ),
            ])[0]
        }

        /// The app's receipt naming `transactionId`, signed by the fake App Store's receipt chain.
        func receipt(_ transactionId: String) throws -> String {
            try ReceiptSigner(chain: try TransactionHistoryTests.chain.get()).base64(
                AppReceipt(
                    environment: "Production", bundleId: "com.example.app", applicationVersion: "1",
                    creationDate: nowMs,
                    purchases: [
                        AppReceiptPurchase(
                            quantity: 1, productId: "coins.100", transactionId: transactionId,
                            originalTransactionId: transactionId, purchaseDate: nowMs - TransactionHistoryTests.minute
                        ),
                    ]
                )
            )
        }

        func drain(maxAttempts: Int = 6) throws {
            let trusted = ReceiptSignatureVerifier(rootCertificates: [try TransactionHistoryTests.chain.get().root])
            try h.drain(timeout: 120, serverAPI: true) {
                $0.receiptSource = .serverAPI
                $0.receiptSignature = trusted
                $0.retry.maxAttempts = maxAttempts
            }
        }

        /// History requests the fake answered in production.
        var historyRequests: Int { h.fake.apiStats().requests["production.transaction_history"] ?? 0 }

        static func timestamp(_ milliseconds: Int64) -> String {
            ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
    }

    @Test("the order's product since the order, newest first: one request, the newest purchase credited")
    func sinceTheOrder() throws {
        let world = try World()
        let job = try world.h.enqueue(
            try world.receipt(world.oldest.transactionId), order: "coins-today", product: "coins.100",
            orderCreatedAt: World.timestamp(world.nowMs - 2 * Self.minute)
        )
        try world.drain()
        let row = try world.h.job(job)
        #expect(row["state"] == "verified", "\(row)")
        #expect(
            try world.h.scalar("SELECT transaction_id FROM receipt_transactions WHERE job_id = $1", [String(job)])
                == world.newest.transactionId
        )
        #expect(world.historyRequests == 1, "productId, startDate and sort=DESCENDING leave one page to read")
    }

    @Test("the client's transaction, newest first: the first page holds it, one request")
    func clientTransaction() throws {
        let world = try World()
        let job = try world.h.enqueue(
            try world.receipt(world.newest.transactionId), order: "coins-reported", product: "coins.100",
            transaction: world.newest.transactionId
        )
        try world.drain()
        let row = try world.h.job(job)
        #expect(row["state"] == "verified", "\(row)")
        #expect(row["result"]?.contains(world.newest.transactionId) == true, "\(row)")
        #expect(world.historyRequests == 1, "oldest first, it would have taken 151 pages")
    }

    @Test("the page cap reached before every candidate is read: retried, never decided, dead once attempts run out")
    func pageCap() throws {
        let world = try World()
        // No transaction id and no order time: every coins.100 purchase is a candidate, 151 pages of them, and the
        // cap is 50. A verdict from the first 50 pages could credit the wrong purchase or none.
        let job = try world.h.enqueue(try world.receipt(world.newest.transactionId), order: "coins-any", product: "coins.100")
        try world.drain(maxAttempts: 2)
        let row = try world.h.job(job)
        #expect(row["state"] == "dead", "\(row)")
        #expect(row["reason"] == "retries_exhausted", "\(row)")
        #expect(row["attempts"] == "2", "\(row)")
        #expect(row["last_error"]?.contains("more than 50 pages") == true, "\(row)")
        #expect(try world.h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
        #expect(world.historyRequests == 2 * 50, "50 pages an attempt, each attempt from the newest again")
    }

    @Test("the client's transaction past the page cap: retried, not transaction_not_found")
    func clientTransactionPastTheCap() throws {
        let world = try World()
        // Newest first, the oldest purchase is on page 151.
        let job = try world.h.enqueue(
            try world.receipt(world.newest.transactionId), order: "coins-old", product: "coins.100",
            transaction: world.oldest.transactionId
        )
        try world.drain(maxAttempts: 1)
        let row = try world.h.job(job)
        #expect(row["state"] == "dead", "\(row)")
        #expect(row["last_error"]?.contains("before transaction \(world.oldest.transactionId) was read") == true, "\(row)")
        #expect(world.historyRequests == 50)
    }

    @Test("no purchase of the product since the order: transaction_not_found if bought before, else product_mismatch")
    func nothingSinceTheOrder() throws {
        let world = try World()
        let later = try world.h.enqueue(
            try world.receipt(world.newest.transactionId), order: "coins-tomorrow", product: "coins.100",
            orderCreatedAt: World.timestamp(world.nowMs + 60 * Self.minute)
        )
        let never = try world.h.enqueue(
            try world.receipt(world.newest.transactionId), order: "gems", product: "gems.500",
            orderCreatedAt: World.timestamp(world.nowMs)
        )
        try world.drain()
        #expect(try world.h.job(later)["reason"] == "transaction_not_found")
        #expect(try world.h.job(never)["reason"] == "product_mismatch")
        #expect(world.historyRequests == 4, "each: its product since the order, then the product's newest page")
    }
}
