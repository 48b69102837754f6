import AppStoreModel
import FakeAppStore
import Foundation

/// The orders a run enqueues: each with its own scenario receipt holding one purchase with a distinct transaction
/// id, so each is credited once and none is a replay.
struct BenchReceipts {
    struct Order {
        /// The receipt, or the signed transaction (JWS) in signed mode.
        var receiptData: String
        var orderId: String
        var userId: String
        var transactionId: String
    }

    static let productId = "bench.coins.100"

    /// `count` orders, each paid by a StoreKit 2 transaction that `signer` signed as the App Store would.
    static func signedOrders(count: Int, tag: String, signer: JWSSigner) throws -> [Order] {
        let purchased = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        return try (0..<count).map { index in
            let transactionId = "\(tag)-\(index)"
            let payload = """
                {"transactionId":"\(transactionId)","originalTransactionId":"\(transactionId)",\
                "bundleId":"\(BenchEnvironment.bundleId)","productId":"\(productId)","purchaseDate":\(purchased),\
                "quantity":1,"type":"Consumable","inAppOwnershipType":"PURCHASED","environment":"Production",\
                "transactionReason":"PURCHASE","signedDate":\(purchased)}
                """
            return Order(
                receiptData: try signer.sign(Data(payload.utf8)), orderId: "order-\(transactionId)",
                userId: "user-\(index % 1000)", transactionId: transactionId
            )
        }
    }

    /// `count` orders, each paid by a purchase `store` (the fake App Store's) holds and signed, so Get Transaction
    /// Info answers for it. Transaction ids are digits, new in a database that outlives the run.
    static func storeOrders(count: Int, tag: String, store: PurchaseStore) throws -> [Order] {
        let run = UInt32.random(in: 1_000_000...UInt32.max)
        let purchased = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let purchases = (0..<count).map { index in
            FakePurchase(
                bundleId: BenchEnvironment.bundleId, productId: productId,
                transactionId: "\(run)\(String(index + 10_000_000))", purchaseDate: purchased
            )
        }
        var orders: [Order] = []
        orders.reserveCapacity(count)
        for chunk in stride(from: 0, to: count, by: 1_000) {
            for signed in try store.add(Array(purchases[chunk..<min(count, chunk + 1_000)])) {
                orders.append(
                    Order(
                        receiptData: signed.signedTransaction, orderId: "order-\(tag)-\(signed.transactionId)",
                        userId: "user-\(orders.count % 1000)", transactionId: signed.transactionId
                    )
                )
            }
        }
        return orders
    }

    /// `count` orders named `<tag>-<prefix><n>`.
    static func orders(count: Int, tag: String, prefix: String) -> [Order] {
        let purchased = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        return (0..<count).map { index in
            let transactionId = "\(tag)-\(prefix)\(index)"
            let receipt = ScenarioReceipt(
                environment: "Production",
                bundleId: BenchEnvironment.bundleId,
                inApp: [
                    InAppTransaction(
                        quantity: 1, productId: productId, transactionId: transactionId,
                        originalTransactionId: transactionId, purchaseDateMs: purchased
                    )
                ]
            )
            return Order(
                receiptData: receipt.base64(), orderId: "order-\(transactionId)", userId: "user-\(index % 1000)",
                transactionId: transactionId
            )
        }
    }
}
