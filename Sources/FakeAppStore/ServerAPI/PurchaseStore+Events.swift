import Foundation

/// What happens to purchases after they are made, as the App Store reports it: each event changes the stored
/// purchase (re-signing what changed) and records the notification Apple sends, with a fresh notificationUUID and
/// `signedDate` (now unless given: an older date stands for a notification delivered out of order). Each returns
/// the recorded notification; `delivered` is what Get Notification History reports until it is really sent.
extension PurchaseStore {
    /// The transaction is refunded: it gets `revocationDate` (the signed date) and `revocationReason` (0 other, 1 an
    /// issue in the app), and a REFUND is recorded.
    @discardableResult
    public func refund(
        transactionId: String, reason: Int = 0, signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, now throws(FakeAppStoreError) in
            var signed = try Self.held(transactionId, in: contents)
            guard signed.purchase.revocationDate == nil else {
                throw FakeAppStoreError(.invalidPurchase, "transaction \(transactionId) is already refunded")
            }
            signed.purchase.revocationDate = now
            signed.purchase.revocationReason = reason
            return Event(type: "REFUND", about: try resign(signed, in: &contents, signedDate: now))
        }
    }

    /// The refund is reversed: the revocation is removed, and a REFUND_REVERSED is recorded.
    @discardableResult
    public func reverseRefund(
        transactionId: String, signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, now throws(FakeAppStoreError) in
            var signed = try Self.held(transactionId, in: contents)
            guard signed.purchase.revocationDate != nil else {
                throw FakeAppStoreError(.invalidPurchase, "transaction \(transactionId) is not refunded")
            }
            signed.purchase.revocationDate = nil
            signed.purchase.revocationReason = nil
            return Event(type: "REFUND_REVERSED", about: try resign(signed, in: &contents, signedDate: now))
        }
    }

    /// The subscription renews: a new transaction (new transactionId and webOrderLineItemId, the same
    /// originalTransactionId) for the period after the latest one, as long as that one, of the product it renews
    /// to; a DID_RENEW is recorded. The latest period needs a purchase and an expiry date.
    @discardableResult
    public func renew(
        originalTransactionId: String, signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, now throws(FakeAppStoreError) in
            let latest = try Self.subscription(originalTransactionId, in: contents)
            guard let start = latest.purchase.purchaseDate, let end = latest.purchase.expiresDate, end > start else {
                throw FakeAppStoreError(
                    .invalidPurchase, "transaction \(latest.transactionId) has no period (purchase and expiry dates)"
                )
            }
            let original = latest.originalTransactionId
            var state = contents.renewals[original] ?? RenewalState()
            var next = latest.purchase
            next.transactionId = nil
            next.originalTransactionId = original
            next.customerId = latest.customerId
            next.webOrderLineItemId = nil
            next.orderId = nil
            next.productId = state.autoRenewProductId ?? latest.purchase.productId
            next.purchaseDate = end
            next.expiresDate = end + (end - start)
            next.revocationDate = nil
            next.revocationReason = nil
            let renewed = try insert(next, in: &contents, now: now)
            let recovered = state.billingRetry
            state.autoRenewStatus = 1
            state.expirationIntent = nil
            state.billingRetry = false
            state.gracePeriodExpiresDate = nil
            contents.renewals[original] = state
            return Event(type: "DID_RENEW", subtype: recovered ? "BILLING_RECOVERY" : nil, about: renewed)
        }
    }

    /// The subscription expires: an EXPIRED with `subtype` (VOLUNTARY, BILLING_RETRY, PRICE_INCREASE,
    /// PRODUCT_NOT_FOR_SALE), about its latest transaction; the renewal info then has the matching
    /// expirationIntent (1, 2, 3, 4; 5 for another subtype) and, when VOLUNTARY, auto-renew off.
    @discardableResult
    public func expire(
        originalTransactionId: String, subtype: String? = "VOLUNTARY", signedDate: Date = Date(),
        delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, _ throws(FakeAppStoreError) in
            let latest = try Self.subscription(originalTransactionId, in: contents)
            var state = contents.renewals[latest.originalTransactionId] ?? RenewalState()
            let intents = ["VOLUNTARY": 1, "BILLING_RETRY": 2, "PRICE_INCREASE": 3, "PRODUCT_NOT_FOR_SALE": 4]
            state.expirationIntent = subtype.flatMap { intents[$0] } ?? 5
            if subtype == "VOLUNTARY" { state.autoRenewStatus = 0 }
            state.billingRetry = false
            state.gracePeriodExpiresDate = nil
            contents.renewals[latest.originalTransactionId] = state
            return Event(type: "EXPIRED", subtype: subtype, about: latest)
        }
    }

    /// A notification of any type about `transactionId` as it stands (DID_CHANGE_RENEWAL_STATUS, CONSUMPTION_REQUEST,
    /// TEST, …). DID_CHANGE_RENEWAL_STATUS with AUTO_RENEW_ENABLED or AUTO_RENEW_DISABLED also turns the
    /// subscription's auto-renew on or off; a TEST carries no transaction, as Apple's does.
    @discardableResult
    public func notify(
        type: String, subtype: String? = nil, transactionId: String, consumptionRequestReason: String? = nil,
        signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, _ throws(FakeAppStoreError) in
            let signed = try Self.held(transactionId, in: contents)
            if type == "DID_CHANGE_RENEWAL_STATUS", signed.purchase.type == Self.autoRenewable,
                let status = ["AUTO_RENEW_ENABLED": 1, "AUTO_RENEW_DISABLED": 0][subtype ?? ""]
            {
                contents.renewals[signed.originalTransactionId, default: RenewalState()].autoRenewStatus = status
            }
            return Event(
                type: type, subtype: subtype, about: signed, consumptionRequestReason: consumptionRequestReason
            )
        }
    }

    /// The notification `notify` would record, not recorded and changing nothing: what a forger would copy.
    func unrecordedNotification(
        type: String, subtype: String?, transactionId: String, consumptionRequestReason: String?, signedDate: Date
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: false, record: false) { contents, _ throws(FakeAppStoreError) in
            Event(
                type: type, subtype: subtype, about: try Self.held(transactionId, in: contents),
                consumptionRequestReason: consumptionRequestReason
            )
        }
    }

    /// What an event reports.
    struct Event {
        var type: String
        var subtype: String?
        var about: SignedPurchase
        var consumptionRequestReason: String?
    }

    /// Applies `change` to the purchases and records the notification it reports; all or nothing (nothing at all
    /// when `record` is false).
    func event(
        signedDate: Date, delivered: Bool, record: Bool = true,
        _ change: (inout Contents, Int64) throws(FakeAppStoreError) -> Event
    ) throws(FakeAppStoreError) -> Notification {
        let milliseconds = Self.milliseconds(signedDate)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> Notification in
            var draft = contents
            let event = try change(&draft, milliseconds)
            let recorded = try notification(
                type: event.type, subtype: event.subtype, about: event.about, in: draft, signedDate: milliseconds,
                delivered: delivered, consumptionRequestReason: event.consumptionRequestReason
            )
            if record {
                draft.notifications.append(recorded)
                contents = draft
            }
            return recorded
        }
    }

    static func held(_ transactionId: String, in contents: Contents) throws(FakeAppStoreError) -> SignedPurchase {
        guard let index = contents.indexByTransaction[transactionId] else {
            throw FakeAppStoreError(.invalidPurchase, "no transaction \(transactionId)")
        }
        return contents.purchases[index]
    }

    /// The latest period of the auto-renewable subscription `originalTransactionId` (a transaction id of any of its
    /// periods is accepted).
    static func subscription(
        _ originalTransactionId: String, in contents: Contents
    ) throws(FakeAppStoreError) -> SignedPurchase {
        let original = try held(originalTransactionId, in: contents).originalTransactionId
        guard let latest = latestPeriod(of: original, in: contents), latest.purchase.type == autoRenewable else {
            throw FakeAppStoreError(
                .invalidPurchase, "transaction \(originalTransactionId) is not an auto-renewable subscription"
            )
        }
        return latest
    }

    /// The transaction of `originalTransactionId`'s chain that starts last (the later one added on a tie).
    static func latestPeriod(of originalTransactionId: String, in contents: Contents) -> SignedPurchase? {
        let chain = contents.purchases.filter { $0.originalTransactionId == originalTransactionId }
        return chain.enumerated().max { earlier, later in
            (earlier.element.purchase.purchaseDate ?? 0, earlier.offset)
                < (later.element.purchase.purchaseDate ?? 0, later.offset)
        }?.element
    }
}
