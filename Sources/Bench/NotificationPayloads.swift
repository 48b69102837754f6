import FakeAppStore
import Foundation

/// The notifications `bench --notifications N` sends, signed by the fake App Store's chain, Production. By default
/// DID_RENEW of N distinct subscriptions, each with its signed transaction (a new monthly period) and signed renewal
/// info inside, as the App Store sends them (three ES256 signatures each); their chains are owned
/// (`receipt_purchase_owners`), so applying one credits the period to the ledger, records a `renewed` event and
/// keeps the subscription's state: the path most notifications take. Or TEST notifications (one signature, an event).
/// Or ONE_TIME_CHARGE of N consumables that no job names, each with its customer's registered appAccountToken
/// (`receipt_account_tokens`): each is credited as an order of its own (issue 37, lost orders), a job, a ledger row
/// and a `credited` event.
struct NotificationPayloads {
    static let productId = "com.example.bench.monthly"
    /// The consumable an announced purchase buys.
    static let chargeProductId = "com.example.bench.coins"

    /// What the notifications are.
    enum Kind: String, Sendable, Codable, CaseIterable {
        /// DID_RENEW, its transaction and renewal info signed inside: credited, an event, the subscription kept.
        case renewal = "DID_RENEW"
        /// Apple's TEST notification (Request a Test Notification): one signature, applied and passed on as an event.
        case test = "TEST"
        /// A consumable bought with a registered token, announced by Apple and sent by no app: credited as an order.
        case announcedPurchase = "ONE_TIME_CHARGE"
    }

    let signer: JWSSigner
    let tag: String
    var kind: Kind = .renewal

    /// The purchase chain of notification `index`.
    func originalTransactionId(_ index: Int) -> String { "bench-\(tag)-\(index)" }

    /// The appAccountToken of notification `index`'s customer (`user-<index>`): a UUID of its own per run and index.
    func accountToken(_ index: Int) -> String {
        let run = UInt32(truncatingIfNeeded: tag.hashValue)
        return String(format: "%08x-0000-4000-8000-%012llx", run, UInt64(index))
    }

    /// Notification `index`, signed (made on all cores: signing is most of the cost).
    func signed(count: Int) throws -> [String] {
        let made = LockedSlots([Result<String, any Error>](repeating: .success(""), count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            made.set(index, Result { try self.signed(index) })
        }
        return try made.values.map { try $0.get() }
    }

    func signed(_ index: Int) throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        if kind == .test {
            let notification: [String: Any] = [
                "notificationType": "TEST", "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": now,
                "data": [
                    "appAppleId": NotificationsRun.appAppleId, "bundleId": BenchEnvironment.bundleId,
                    "bundleVersion": "1", "environment": "Production",
                ] as [String: Any],
            ]
            return try signer.sign(Self.json(notification))
        }
        if kind == .announcedPurchase {
            let transaction: [String: Any] = [
                "transactionId": originalTransactionId(index), "originalTransactionId": originalTransactionId(index),
                "bundleId": BenchEnvironment.bundleId, "productId": Self.chargeProductId, "purchaseDate": now - 1_000,
                "originalPurchaseDate": now - 1_000, "quantity": 1, "type": "Consumable",
                "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Production",
                "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 990,
                "currency": "USD", "appAccountToken": accountToken(index),
            ]
            let notification: [String: Any] = [
                "notificationType": "ONE_TIME_CHARGE", "notificationUUID": UUID().uuidString, "version": "2.0",
                "signedDate": now,
                "data": [
                    "appAppleId": NotificationsRun.appAppleId, "bundleId": BenchEnvironment.bundleId,
                    "bundleVersion": "1", "environment": "Production",
                    "signedTransactionInfo": try signer.sign(Self.json(transaction)),
                ] as [String: Any],
            ]
            return try signer.sign(Self.json(notification))
        }
        let month: Int64 = 30 * 86_400_000
        let original = originalTransactionId(index)
        let transaction: [String: Any] = [
            "transactionId": "\(original)-2", "originalTransactionId": original,
            "webOrderLineItemId": "\(original)-wol-2", "bundleId": BenchEnvironment.bundleId, "productId": Self.productId,
            "subscriptionGroupIdentifier": "bench", "purchaseDate": now - 1_000, "originalPurchaseDate": now - month,
            "expiresDate": now + month, "quantity": 1, "type": "Auto-Renewable Subscription",
            "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Production",
            "transactionReason": "RENEWAL", "storefront": "USA", "storefrontId": "143441", "price": 9_990,
            "currency": "USD",
        ]
        let renewal: [String: Any] = [
            "originalTransactionId": original, "productId": Self.productId, "autoRenewProductId": Self.productId,
            "autoRenewStatus": 1, "isInBillingRetryPeriod": false, "renewalDate": now + month,
            "recentSubscriptionStartDate": now - month, "environment": "Production", "signedDate": now,
        ]
        let notification: [String: Any] = [
            "notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": now,
            "data": [
                "appAppleId": NotificationsRun.appAppleId, "bundleId": BenchEnvironment.bundleId, "bundleVersion": "1",
                "environment": "Production", "status": 1,
                "signedTransactionInfo": try signer.sign(Self.json(transaction)),
                "signedRenewalInfo": try signer.sign(Self.json(renewal)),
            ] as [String: Any],
        ]
        return try signer.sign(Self.json(notification))
    }

    private static func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }
}

/// Results written by `concurrentPerform`'s iterations, each to its own index.
/// `@unchecked Sendable`: every write goes through `lock`.
private final class LockedSlots<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Value]

    init(_ values: [Value]) { storage = values }

    func set(_ index: Int, _ value: Value) {
        lock.lock()
        storage[index] = value
        lock.unlock()
    }

    var values: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
