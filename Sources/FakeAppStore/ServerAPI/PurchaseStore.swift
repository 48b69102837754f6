import AppStoreModel
import Foundation
import Synchronization

/// The purchases and notifications the fake's App Store Server API serves: in memory, signed with the fake's
/// `SigningChain` when added or changed. Purchase events (`PurchaseStore+Events.swift`) change a purchase and record
/// the notification Apple would send about it; the server sends notifications on request
/// (`FakeAppStoreServer.deliver`). Safe to share: everything sits behind one lock.
public final class PurchaseStore: Sendable {
    struct Contents {
        var purchases: [SignedPurchase] = []
        var indexByTransaction: [String: Int] = [:]
        /// Per transaction id, when Apple last changed it: its purchase date, or a later refund, reversal or token
        /// set. What Get Transaction History sorts by.
        var modifiedDates: [String: Int64] = [:]
        var notifications: [Notification] = []
        /// Per auto-renewable subscription (by original transaction id), what its renewal info says beyond its
        /// transactions; absent: renewing, no expiry.
        var renewals: [String: RenewalState] = [:]
        /// Apple's ids are 15-16 digit numbers, increasing.
        var nextTransactionId: Int64 = 2_000_000_000_000_001
        var nextWebOrderLineItemId: Int64 = 1_000_000_000_000_001
        /// Renewal-date extensions asked for, by requestIdentifier (`PurchaseStore+RenewalExtension.swift`).
        var renewalExtensions: [String: RenewalExtensionRecord] = [:]
        /// App transactions (`PurchaseStore+AppTransaction.swift`), one per customer, app and environment.
        var appTransactions: [AppTransaction] = []
    }

    /// A subscription's renewal preferences and expiry, as its renewal info reports them.
    struct RenewalState {
        /// 1 on, 0 off.
        var autoRenewStatus = 1
        /// The product the next period renews to; nil: the current one.
        var autoRenewProductId: String?
        /// Set once expired (EXPIRED), cleared by a renewal.
        var expirationIntent: Int?
        /// A renewal charge failed and Apple retries it (`failRenewal`); cleared by a renewal or an expiry.
        var billingRetry = false
        /// The end of the billing grace period while in billing retry with one.
        var gracePeriodExpiresDate: Int64?
        /// 0: a price increase the customer has not answered, 1: accepted; nil: none.
        var priceIncreaseStatus: Int?
    }

    static let autoRenewable = "Auto-Renewable Subscription"

    let signer: JWSSigner
    let contents = Mutex(Contents())
    /// Signs forged notifications: a chain of Apple's shape under a root nobody trusts, made at the first forgery.
    let forger = Mutex<JWSSigner?>(nil)

    init(signer: JWSSigner) {
        self.signer = signer
    }

    /// Adds purchases (ids assigned where missing), signs each, and records the notification Apple would send for
    /// it. All or nothing: a purchase that could not exist (unknown environment, a transaction id already held, an id
    /// that is not digits) adds none.
    @discardableResult
    public func add(_ purchases: [FakePurchase], now: Date = Date()) throws(FakeAppStoreError) -> [SignedPurchase] {
        let milliseconds = Self.milliseconds(now)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> [SignedPurchase] in
            var draft = contents
            var added: [SignedPurchase] = []
            for purchase in purchases {
                let complete = try insert(purchase, in: &draft, now: milliseconds)
                let (type, subtype) = FakePayloads.notificationType(for: complete)
                draft.notifications.append(
                    try notification(
                        type: type, subtype: subtype, about: complete, in: draft, signedDate: milliseconds,
                        delivered: true
                    )
                )
                added.append(complete)
            }
            contents = draft
            return added
        }
    }

    /// Records one more notification about `transactionId` (a REFUND after the fact, one whose delivery failed, …)
    /// and returns its signed payload; `notify` does the same and returns the whole notification.
    @discardableResult
    public func recordNotification(
        type: String, subtype: String? = nil, transactionId: String, delivered: Bool = true, now: Date = Date()
    ) throws(FakeAppStoreError) -> String {
        try notify(type: type, subtype: subtype, transactionId: transactionId, signedDate: now, delivered: delivered)
            .signedPayload
    }

    /// Every purchase held, in the order they were added.
    public var purchases: [SignedPurchase] {
        contents.withLock { $0.purchases }
    }

    /// Every notification recorded, in the order they were made (forged ones once sent), oldest first.
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

    /// One transaction of a customer's history, with what Get Transaction History orders by.
    struct HistoryEntry {
        var signed: SignedPurchase
        /// When Apple last changed it (milliseconds since 1970).
        var modifiedDate: Int64
        /// Its place among all purchases: breaks ties between equal modification dates.
        var position: Int
    }

    /// The purchases of the customer who owns `transactionId`, for `bundleId` in `environment`, in the order they
    /// were added; nil when the transaction is not there.
    func history(of transactionId: String, environment: String, bundleId: String) -> [HistoryEntry]? {
        guard let owner = transaction(transactionId, environment: environment, bundleId: bundleId) else { return nil }
        return contents.withLock { contents in
            contents.purchases.enumerated().compactMap { position, signed in
                guard signed.customerId == owner.customerId && signed.purchase.environment == environment
                    && signed.purchase.bundleId == bundleId
                else { return nil }
                let modified = contents.modifiedDates[signed.transactionId] ?? signed.purchase.purchaseDate ?? 0
                return HistoryEntry(signed: signed, modifiedDate: modified, position: position)
            }
        }
    }

    /// The refunded purchases of the customer who owns `transactionId`, for `bundleId` in `environment`, oldest
    /// revocation first (Get Refund History's order); nil when the transaction is not there.
    func refunds(of transactionId: String, environment: String, bundleId: String) -> [SignedPurchase]? {
        history(of: transactionId, environment: environment, bundleId: bundleId).map { entries in
            entries.map(\.signed).enumerated().compactMap { index, signed in
                signed.purchase.revocationDate.map { ($0, index, signed) }
            }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            .map(\.2)
        }
    }

    /// The purchases of order `orderId` for `bundleId` (nil: of every app) in `environment`.
    func order(_ orderId: String, environment: String, bundleId: String?) -> [SignedPurchase] {
        contents.withLock { contents in
            contents.purchases.filter {
                $0.purchase.orderId == orderId && $0.purchase.environment == environment
                    && (bundleId == nil || $0.purchase.bundleId == bundleId)
            }
        }
    }

    /// The notifications Get Notification History returns for `request`, oldest first: every genuine one (not the
    /// forged) signed within [startDate, endDate), of the customer, type and subtype asked for, and with
    /// `onlyFailures` those that did not reach the app's server.
    func notifications(
        environment: String, bundleId: String, request: NotificationHistoryRequest
    ) -> [Notification] {
        let customer = request.transactionId.flatMap {
            transaction($0, environment: environment, bundleId: bundleId)?.customerId
        }
        return contents.withLock { contents in
            contents.notifications.filter { notification in
                !notification.forged && notification.environment == environment && notification.bundleId == bundleId
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
        guard let storefront = FakeStorefront.named(purchase.storefront) else {
            throw FakeAppStoreError(
                .invalidPurchase,
                "storefront must be one of \(FakeStorefront.all.map(\.code).joined(separator: ", ")), "
                    + "not \(purchase.storefront)"
            )
        }
        guard purchase.basePrice >= 0, storefront.price(basePrice: purchase.basePrice) != nil else {
            throw FakeAppStoreError(
                .invalidPurchase, "basePrice must be 0 or more US dollar milliunits, not \(purchase.basePrice)"
            )
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
        if purchase.type == autoRenewable, purchase.webOrderLineItemId == nil {
            resolved.webOrderLineItemId = String(contents.nextWebOrderLineItemId)
            contents.nextWebOrderLineItemId += 1
        }
        resolved.transactionId = transactionId
        resolved.originalTransactionId = originalTransactionId
        resolved.customerId = customerId
        return SignedPurchase(
            purchase: resolved, transactionId: transactionId, originalTransactionId: originalTransactionId,
            customerId: customerId, signedTransaction: ""
        )
    }

    /// Adds `purchase` to `contents` (ids assigned, purchase date `now` when it has none) and signs its transaction.
    func insert(_ purchase: FakePurchase, in contents: inout Contents, now: Int64) throws(FakeAppStoreError)
        -> SignedPurchase
    {
        var complete = try Self.resolve(purchase, in: &contents)
        complete.purchase.purchaseDate = purchase.purchaseDate ?? now
        contents.indexByTransaction[complete.transactionId] = contents.purchases.count
        contents.purchases.append(complete)
        let signed = try resign(complete, in: &contents, signedDate: now)
        contents.modifiedDates[complete.transactionId] = complete.purchase.purchaseDate ?? now
        return signed
    }

    /// Signs `signed`'s transaction as it now stands and stores it in place of the one with its id.
    @discardableResult
    func resign(_ signed: SignedPurchase, in contents: inout Contents, signedDate: Int64) throws(FakeAppStoreError)
        -> SignedPurchase
    {
        let original = contents.indexByTransaction[signed.originalTransactionId].map { contents.purchases[$0] }
        let payload = FakePayloads.transaction(
            signed,
            originalPurchaseDate: original?.purchase.purchaseDate ?? signed.purchase.purchaseDate ?? signedDate,
            signedDate: signedDate
        )
        var complete = signed
        complete.signedTransaction = try sign(payload)
        if let index = contents.indexByTransaction[complete.transactionId] {
            contents.purchases[index] = complete
        }
        contents.modifiedDates[complete.transactionId] = signedDate
        return complete
    }

    /// The notification Apple sends about `signed` (not recorded): the transaction, and for an auto-renewable
    /// subscription its renewal info and status; a TEST notification carries neither.
    func notification(
        type: String, subtype: String?, about signed: SignedPurchase, in contents: Contents, signedDate: Int64,
        delivered: Bool, consumptionRequestReason: String? = nil
    ) throws(FakeAppStoreError) -> Notification {
        let purchase = signed.purchase
        let isTest = type == "TEST"
        var data = FakePayloads.Notification.Data(
            appAppleId: FakePayloads.appAppleId(bundleId: purchase.bundleId, environment: purchase.environment),
            bundleId: purchase.bundleId,
            environment: purchase.environment,
            signedTransactionInfo: isTest ? nil : signed.signedTransaction,
            consumptionRequestReason: consumptionRequestReason
        )
        if !isTest, purchase.type == Self.autoRenewable,
            let (renewalInfo, status) = Self.renewalInfo(of: signed.originalTransactionId, in: contents, signedDate)
        {
            data.signedRenewalInfo = try sign(renewalInfo)
            data.status = status
        }
        let uuid = UUID().uuidString.lowercased()
        let payload = FakePayloads.Notification(
            notificationType: type, subtype: subtype, notificationUUID: uuid, data: data, signedDate: signedDate
        )
        return Notification(
            notificationUUID: uuid, environment: purchase.environment, bundleId: purchase.bundleId,
            customerId: signed.customerId, transactionId: signed.transactionId, notificationType: type,
            subtype: subtype, signedDate: signedDate, delivered: delivered, signedPayload: try sign(payload)
        )
    }

    func sign(_ payload: some Encodable) throws(FakeAppStoreError) -> String {
        do {
            return try signer.sign(try FakePayloads.json(payload))
        } catch {
            throw FakeAppStoreError(.signing, "cannot sign a payload: \(error)")
        }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
