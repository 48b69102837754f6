import AppStoreModel
import FakeAppStore
import Foundation

/// The orders a run enqueues: each with its own scenario receipt holding one purchase with a distinct transaction
/// id, so each is credited once and none is a replay.
struct BenchReceipts {
    struct Order {
        var receiptData: String
        var orderId: String
        var userId: String
        var transactionId: String
    }

    static let productId = "bench.coins.100"

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
