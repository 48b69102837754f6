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

    /// `count` random letters and digits (twice as many as asked, so that receipts can start reading at different
    /// places).
    static func filler(count: Int) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var generator = SystemRandomNumberGenerator()
        return (0..<(2 * count)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
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

    /// `count` orders named `<tag>-<prefix><n>`, each receipt padded to about `receiptBytes` of base64 when given
    /// (with random text in the scenario's nonce, which compresses about as little as a real receipt's signature).
    static func orders(count: Int, tag: String, prefix: String, receiptBytes: Int? = nil) -> [Order] {
        let purchased = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let filler = receiptBytes.map { Self.filler(count: $0 * 3 / 4 + 64) } ?? []
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
            var padded = receipt
            if let receiptBytes {
                // The nonce takes what the receipt lacks of the size (base64: 4 bytes for 3), from a pool of random
                // letters read at a different place for each receipt.
                let missing = max(0, receiptBytes * 3 / 4 - receipt.base64().utf8.count * 3 / 4 - 12)
                let start = (index &* 7_919) % max(1, filler.count - missing)
                padded.nonce = String(decoding: filler[start..<(start + min(missing, filler.count))], as: UTF8.self)
            }
            return Order(
                receiptData: padded.base64(), orderId: "order-\(transactionId)", userId: "user-\(index % 1000)",
                transactionId: transactionId
            )
        }
    }
}
