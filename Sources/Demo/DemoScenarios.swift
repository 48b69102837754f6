import AppStoreModel
import FakeAppStore
import Foundation

/// One sample order of the demo: what the API layer would enqueue, and the verdict it is meant to show.
struct DemoOrder {
    var orderId: String
    /// What the order shows, for the table.
    var scenario: String
    var userId: String
    var productId: String
    /// The transaction id the client reported, when it did.
    var transactionId: String?
    var bundleId = DemoScenarios.app
    /// What the app sent: a receipt (base64), or with `signed`, a StoreKit 2 signed transaction (JWS).
    var receipt: String
    var signed = false
    /// 1, or 2: enqueued once every phase-1 job is final, so a replay finds its original already credited; 4: phase
    /// 4's subscription (`DemoRun.graceSubscriber`); 5: phase 5's lost order (`DemoRun.lostOrder`).
    var phase = 1
    var expected: Expected

    struct Expected: Equatable, CustomStringConvertible {
        var state: String
        var reason: String?
        var environment: String?

        var description: String {
            [state, reason, environment].compactMap { $0 }.joined(separator: " / ")
        }
    }
}

/// The demo's sample orders: one per outcome a backend meets, as scenario receipts for the fake App Store and
/// StoreKit 2 signed transactions signed by the demo's own App Store-shaped chain.
enum DemoScenarios {
    /// The app the demo verifies for.
    static let app = "com.example.demo"
    /// Another developer's app, whose receipt is sent in for one of ours.
    static let otherApp = "com.example.othergame"
    /// Phase 4's subscription comes after the orders of `orders(tag:signer:now:)`.
    static let subscriptionOrderNumber = 15
    /// Phase 5's lost order comes after it.
    static let lostOrderNumber = 16

    /// The orders of one run. `tag` makes order ids unique in a database that outlives the run (empty for the
    /// temporary one); transaction ids are made unique from `now`, since the ledger keeps every credit forever.
    static func orders(tag: String, signer: JWSSigner, now: Date = Date()) throws -> [DemoOrder] {
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let transactionBase = nowMs * 10
        let day: Int64 = 86_400_000
        func order(_ number: Int) -> String { "order-\(tag)\(number < 10 ? "0" : "")\(number)" }
        func transaction(_ number: Int) -> String { String(transactionBase + Int64(number)) }
        func purchase(
            _ number: Int, _ product: String, agoMs: Int64 = 120_000, expiresInMs: Int64? = nil,
            refundedAgoMs: Int64? = nil
        ) -> InAppTransaction {
            InAppTransaction(
                quantity: 1, productId: product, transactionId: transaction(number),
                originalTransactionId: transaction(number), purchaseDateMs: nowMs - agoMs,
                expiresDateMs: expiresInMs.map { nowMs + $0 },
                cancellationDateMs: refundedAgoMs.map { nowMs - $0 }, cancellationReason: refundedAgoMs.map { _ in "0" }
            )
        }
        func receipt(
            _ purchases: [InAppTransaction], environment: String = "Production", bundle: String = app,
            faults: [ScenarioReceipt.Fault] = [], nonce: String
        ) -> String {
            ScenarioReceipt(
                environment: environment, bundleId: bundle, inApp: purchases, faults: faults, nonce: nonce + tag
            ).base64()
        }

        /// A StoreKit 2 transaction as the App Store signs it (by `by`, else the demo's chain).
        func signed(
            _ number: Int, _ product: String, refundedAgoMs: Int64? = nil, by other: JWSSigner? = nil
        ) throws -> String {
            var payload: [String: Any] = [
                "transactionId": transaction(number), "originalTransactionId": transaction(number),
                "bundleId": app, "productId": product, "purchaseDate": nowMs - 120_000, "quantity": 1,
                "type": "Consumable", "inAppOwnershipType": "PURCHASED", "environment": "Production",
                "transactionReason": "PURCHASE", "signedDate": nowMs,
            ]
            if let refundedAgoMs {
                payload["revocationDate"] = nowMs - refundedAgoMs
                payload["revocationReason"] = 0
            }
            return try (other ?? signer).sign(try JSONSerialization.data(withJSONObject: payload, options: .sortedKeys))
        }

        let coins = receipt([purchase(1, "coins.100")], nonce: "coins")
        let gems = try signed(10, "gems.1000")
        return [
            DemoOrder(
                orderId: order(1), scenario: "production purchase", userId: "alice", productId: "coins.100",
                transactionId: transaction(1), receipt: coins,
                expected: .init(state: "verified", environment: "Production")
            ),
            DemoOrder(
                orderId: order(2), scenario: "sandbox (App Review)", userId: "reviewer",
                productId: "pro.monthly",
                receipt: receipt(
                    [purchase(2, "pro.monthly", expiresInMs: 30 * day)], environment: "Sandbox", nonce: "review"
                ),
                expected: .init(state: "verified", environment: "Sandbox")
            ),
            DemoOrder(
                orderId: order(3), scenario: "refunded purchase", userId: "carol", productId: "coins.500",
                receipt: receipt([purchase(3, "coins.500", refundedAgoMs: 30_000)], nonce: "refund"),
                expected: .init(state: "rejected", reason: "refunded", environment: "Production")
            ),
            DemoOrder(
                orderId: order(4), scenario: "paid for other product", userId: "dave", productId: "gems.1000",
                receipt: receipt([purchase(4, "coins.100")], nonce: "wrong-product"),
                expected: .init(state: "rejected", reason: "product_mismatch", environment: "Production")
            ),
            DemoOrder(
                orderId: order(5), scenario: "another app's receipt", userId: "erin", productId: "coins.100",
                receipt: receipt([purchase(5, "coins.100")], bundle: otherApp, nonce: "other-app"),
                expected: .init(state: "rejected", reason: "bundle_mismatch", environment: "Production")
            ),
            DemoOrder(
                orderId: order(6), scenario: "Apple fails 3 times", userId: "frank",
                productId: "coins.100",
                receipt: receipt(
                    [purchase(6, "coins.100")], faults: [.status21005, .html503, .truncated], nonce: "flaky"
                ),
                expected: .init(state: "verified", environment: "Production")
            ),
            DemoOrder(
                orderId: order(7), scenario: "expired subscription", userId: "grace",
                productId: "pro.monthly", transactionId: transaction(7),
                receipt: receipt(
                    [purchase(7, "pro.monthly", agoMs: 40 * day, expiresInMs: -10 * day)], nonce: "expired"
                ),
                expected: .init(state: "rejected", reason: "expired", environment: "Production")
            ),
            DemoOrder(
                orderId: order(8), scenario: "garbage, not base64", userId: "heidi", productId: "coins.100",
                receipt: "this is not a receipt!",
                expected: .init(state: "rejected", reason: "malformed_input")
            ),
            DemoOrder(
                orderId: order(9), scenario: "replay of \(order(1))", userId: "mallory",
                productId: "coins.100", receipt: coins, phase: 2,
                expected: .init(state: "rejected", reason: "already_credited", environment: "Production")
            ),
            DemoOrder(
                orderId: order(10), scenario: "StoreKit 2 purchase", userId: "ivan", productId: "gems.1000",
                receipt: gems, signed: true,
                expected: .init(state: "verified", environment: "Production")
            ),
            DemoOrder(
                orderId: order(11), scenario: "StoreKit 2, refunded", userId: "judy", productId: "gems.1000",
                receipt: try signed(11, "gems.1000", refundedAgoMs: 30_000), signed: true,
                expected: .init(state: "rejected", reason: "refunded", environment: "Production")
            ),
            DemoOrder(
                orderId: order(12), scenario: "StoreKit 2, other product", userId: "ken", productId: "pro.monthly",
                receipt: try signed(12, "gems.1000"), signed: true,
                expected: .init(state: "rejected", reason: "product_mismatch", environment: "Production")
            ),
            DemoOrder(
                orderId: order(13), scenario: "StoreKit 2, forged signature", userId: "mallory",
                productId: "gems.1000", receipt: try signed(13, "gems.1000", by: JWSSigner(chain: SigningChain())),
                signed: true, expected: .init(state: "rejected", reason: "invalid_signature")
            ),
            DemoOrder(
                orderId: order(14), scenario: "replay of \(order(10))", userId: "mallory", productId: "gems.1000",
                receipt: gems, signed: true, phase: 2,
                expected: .init(state: "rejected", reason: "already_credited", environment: "Production")
            ),
        ]
    }
}
