import AppStoreModel
import Foundation
import Synchronization

/// The purchases and notifications the fake's App Store Server API serves: in memory, signed once when added, with
/// the fake's `SigningChain`. Safe to share: everything sits behind one lock.
public final class PurchaseStore: Sendable {
    /// A notification the fake App Store "sent" (it sends none: they are kept for Get Notification History).
    public struct Notification: Sendable, Hashable {
        public var environment: String
        public var bundleId: String
        public var customerId: String
        public var transactionId: String
        public var notificationType: String
        public var subtype: String?
        /// Milliseconds since 1970.
        public var signedDate: Int64
        /// Whether delivery to the app's server succeeded (Get Notification History's `onlyFailures`).
        public var delivered: Bool
        public var signedPayload: String
    }

    private struct Contents {
        var purchases: [SignedPurchase] = []
        var indexByTransaction: [String: Int] = [:]
        var notifications: [Notification] = []
        /// Apple's ids are 15-16 digit numbers, increasing.
        var nextTransactionId: Int64 = 2_000_000_000_000_001
    }

    private let signer: JWSSigner
    private let contents = Mutex(Contents())

    init(signer: JWSSigner) {
        self.signer = signer
    }

    /// Adds purchases (ids assigned where missing), signs each, and records the notification Apple would send for
    /// it. All or nothing: a purchase that could not exist (unknown environment, a transaction id already held, an id
    /// that is not digits) adds none.
    @discardableResult
    public func add(_ purchases: [FakePurchase], now: Date = Date()) throws(FakeAppStoreError) -> [SignedPurchase] {
        let milliseconds = Int64(now.timeIntervalSince1970 * 1000)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> [SignedPurchase] in
            var draft = contents
            var added: [SignedPurchase] = []
            for purchase in purchases {
                let signed = try Self.resolve(purchase, in: &draft)
                let original = draft.indexByTransaction[signed.originalTransactionId].map { draft.purchases[$0] }
                let purchaseDate = purchase.purchaseDate ?? milliseconds
                let payload = FakePayloads.transaction(
                    signed, originalPurchaseDate: original?.purchase.purchaseDate ?? purchaseDate,
                    signedDate: milliseconds
                )
                var complete = signed
                complete.signedTransaction = try sign(payload)
                draft.indexByTransaction[complete.transactionId] = draft.purchases.count
                draft.purchases.append(complete)
                let (type, subtype) = FakePayloads.notificationType(for: complete)
                draft.notifications.append(
                    try notification(type: type, subtype: subtype, for: complete, delivered: true, now: milliseconds)
                )
                added.append(complete)
            }
            contents = draft
            return added
        }
    }

    /// Records one more notification about `transactionId` (a REFUND after the fact, one whose delivery failed, …)
    /// and returns its signed payload.
    @discardableResult
    public func recordNotification(
        type: String, subtype: String? = nil, transactionId: String, delivered: Bool = true, now: Date = Date()
    ) throws(FakeAppStoreError) -> String {
        let milliseconds = Int64(now.timeIntervalSince1970 * 1000)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> String in
            guard let index = contents.indexByTransaction[transactionId] else {
                throw FakeAppStoreError(.invalidPurchase, "no transaction \(transactionId) to notify about")
            }
            let recorded = try notification(
                type: type, subtype: subtype, for: contents.purchases[index], delivered: delivered, now: milliseconds
            )
            contents.notifications.append(recorded)
            return recorded.signedPayload
        }
    }

    /// Every purchase held, in the order they were added.
    public var purchases: [SignedPurchase] {
        contents.withLock { $0.purchases }
    }

    /// Every notification recorded, oldest first.
    public var notifications: [Notification] {
        contents.withLock { $0.notifications }
    }

    /// The purchase `transactionId` of `bundleId` in `environment`.
    func transaction(_ transactionId: String, environment: String, bundleId: String) -> SignedPurchase? {
        contents.withLock { contents in
            contents.indexByTransaction[transactionId].map { contents.purchases[$0] }.flatMap { signed in
                signed.purchase.environment == environment && signed.purchase.bundleId == bundleId ? signed : nil
            }
        }
    }

    /// The purchases of the customer who owns `transactionId`, for `bundleId` in `environment`, oldest first; nil
    /// when the transaction is not there.
    func history(of transactionId: String, environment: String, bundleId: String) -> [SignedPurchase]? {
        guard let owner = transaction(transactionId, environment: environment, bundleId: bundleId) else { return nil }
        return contents.withLock { contents in
            contents.purchases.filter {
                $0.customerId == owner.customerId && $0.purchase.environment == environment
                    && $0.purchase.bundleId == bundleId
            }
        }
    }

    /// The purchases of order `orderId` for `bundleId` in `environment`.
    func order(_ orderId: String, environment: String, bundleId: String) -> [SignedPurchase] {
        contents.withLock { contents in
            contents.purchases.filter {
                $0.purchase.orderId == orderId && $0.purchase.environment == environment
                    && $0.purchase.bundleId == bundleId
            }
        }
    }

    /// The notifications Get Notification History returns for `request`, oldest first.
    func notifications(
        environment: String, bundleId: String, request: NotificationHistoryRequest
    ) -> [Notification] {
        let customer = request.transactionId.flatMap {
            transaction($0, environment: environment, bundleId: bundleId)?.customerId
        }
        return contents.withLock { contents in
            contents.notifications.filter { notification in
                notification.environment == environment && notification.bundleId == bundleId
                    && notification.signedDate >= request.startDate && notification.signedDate < request.endDate
                    && (request.transactionId == nil || notification.customerId == customer)
                    && (request.notificationType == nil || notification.notificationType == request.notificationType)
                    && (request.notificationSubtype == nil || notification.subtype == request.notificationSubtype)
                    && (request.onlyFailures != true || !notification.delivered)
            }
        }
    }

    /// Fills in the ids of `purchase` (taking a new transaction id from `contents` when it has none); the signed
    /// transaction is left empty.
    private static func resolve(
        _ purchase: FakePurchase, in contents: inout Contents
    ) throws(FakeAppStoreError) -> SignedPurchase {
        guard ["Production", "Sandbox"].contains(purchase.environment) else {
            throw FakeAppStoreError(
                .invalidPurchase, "environment must be Production or Sandbox, not \(purchase.environment)"
            )
        }
        guard !purchase.bundleId.isEmpty, !purchase.productId.isEmpty else {
            throw FakeAppStoreError(.invalidPurchase, "a purchase needs a bundleId and a productId")
        }
        let transactionId: String
        if let given = purchase.transactionId {
            guard !given.isEmpty, given.utf8.allSatisfy({ (48...57).contains($0) }) else {
                throw FakeAppStoreError(.invalidPurchase, "transactionId must be digits, not \(given)")
            }
            guard contents.indexByTransaction[given] == nil else {
                throw FakeAppStoreError(.invalidPurchase, "transaction \(given) is already held")
            }
            transactionId = given
        } else {
            while contents.indexByTransaction[String(contents.nextTransactionId)] != nil {
                contents.nextTransactionId += 1
            }
            transactionId = String(contents.nextTransactionId)
            contents.nextTransactionId += 1
        }
        let originalTransactionId = purchase.originalTransactionId ?? transactionId
        let original = contents.indexByTransaction[originalTransactionId].map { contents.purchases[$0] }
        let customerId = purchase.customerId ?? original?.customerId ?? "customer-\(originalTransactionId)"
        var resolved = purchase
        resolved.transactionId = transactionId
        resolved.originalTransactionId = originalTransactionId
        resolved.customerId = customerId
        return SignedPurchase(
            purchase: resolved, transactionId: transactionId, originalTransactionId: originalTransactionId,
            customerId: customerId, signedTransaction: ""
        )
    }

    private func notification(
        type: String, subtype: String?, for signed: SignedPurchase, delivered: Bool, now: Int64
    ) throws(FakeAppStoreError) -> Notification {
        let purchase = signed.purchase
        let payload = FakePayloads.Notification(
            notificationType: type,
            subtype: subtype,
            notificationUUID: UUID().uuidString.lowercased(),
            data: .init(
                appAppleId: FakePayloads.appAppleId(bundleId: purchase.bundleId, environment: purchase.environment),
                bundleId: purchase.bundleId,
                environment: purchase.environment,
                signedTransactionInfo: signed.signedTransaction
            ),
            signedDate: now
        )
        return Notification(
            environment: signed.purchase.environment, bundleId: signed.purchase.bundleId,
            customerId: signed.customerId, transactionId: signed.transactionId, notificationType: type,
            subtype: subtype, signedDate: now, delivered: delivered, signedPayload: try sign(payload)
        )
    }

    private func sign(_ payload: some Encodable) throws(FakeAppStoreError) -> String {
        do {
            return try signer.sign(try FakePayloads.json(payload))
        } catch {
            throw FakeAppStoreError(.signing, "cannot sign a payload: \(error)")
        }
    }
}
