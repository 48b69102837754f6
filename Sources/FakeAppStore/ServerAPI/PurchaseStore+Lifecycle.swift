import Foundation

/// The rest of a subscription's life as the App Store plays it, each with the notification Apple sends; the renewal
/// info (and Get All Subscription Statuses) tells the same story. A failed charge puts the chain in billing retry
/// (with a grace period when given): `renew` recovers it (DID_RENEW BILLING_RECOVERY), `expire(subtype:
/// "BILLING_RETRY")` ends it.
extension PurchaseStore {
    /// The renewal charge failed: DID_FAIL_TO_RENEW (subtype GRACE_PERIOD when `graceSeconds` is given, the grace
    /// period ending that long after the period's end); status 4 during the grace period, else 3.
    @discardableResult
    public func failRenewal(
        originalTransactionId: String, graceSeconds: Double? = nil, signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, _ throws(FakeAppStoreError) in
            let latest = try Self.subscription(originalTransactionId, in: contents)
            var state = contents.renewals[latest.originalTransactionId] ?? RenewalState()
            state.billingRetry = true
            state.gracePeriodExpiresDate = graceSeconds.map {
                (latest.purchase.expiresDate ?? 0) + Int64(($0 * 1000).rounded())
            }
            contents.renewals[latest.originalTransactionId] = state
            return Event(type: "DID_FAIL_TO_RENEW", subtype: graceSeconds == nil ? nil : "GRACE_PERIOD", about: latest)
        }
    }

    /// The customer picks another product for the next period: DID_CHANGE_RENEWAL_PREF, UPGRADE (the new product at
    /// once: a new transaction from now to the period's end) or DOWNGRADE (from the next renewal).
    @discardableResult
    public func changeRenewalPreference(
        originalTransactionId: String, to productId: String, upgrade: Bool, signedDate: Date = Date(),
        delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, now throws(FakeAppStoreError) in
            let latest = try Self.subscription(originalTransactionId, in: contents)
            let original = latest.originalTransactionId
            guard upgrade else {
                contents.renewals[original, default: RenewalState()].autoRenewProductId = productId
                return Event(type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", about: latest)
            }
            var next = latest.purchase
            next.transactionId = nil
            next.originalTransactionId = original
            next.customerId = latest.customerId
            next.webOrderLineItemId = nil
            next.orderId = nil
            next.productId = productId
            next.purchaseDate = now
            let upgraded = try insert(next, in: &contents, now: now)
            contents.renewals[original, default: RenewalState()].autoRenewProductId = nil
            return Event(type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", about: upgraded)
        }
    }

    /// A price increase: PRICE_INCREASE PENDING (the customer has not answered) or ACCEPTED.
    @discardableResult
    public func priceIncrease(
        originalTransactionId: String, accepted: Bool, signedDate: Date = Date(), delivered: Bool = true
    ) throws(FakeAppStoreError) -> Notification {
        try event(signedDate: signedDate, delivered: delivered) { contents, _ throws(FakeAppStoreError) in
            let latest = try Self.subscription(originalTransactionId, in: contents)
            contents.renewals[latest.originalTransactionId, default: RenewalState()].priceIncreaseStatus =
                accepted ? 1 : 0
            return Event(type: "PRICE_INCREASE", subtype: accepted ? "ACCEPTED" : "PENDING", about: latest)
        }
    }
}
