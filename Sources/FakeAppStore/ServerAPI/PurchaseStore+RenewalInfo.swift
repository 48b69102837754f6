extension PurchaseStore {
    /// Apple ignores lapses shorter than this when it reports recentSubscriptionStartDate.
    static let lapseIgnoredMilliseconds: Int64 = 60 * 86_400_000

    /// The renewal info of the auto-renewable subscription `originalTransactionId` as it stands, signed at
    /// `signedDate`, and its `data.status` (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked); nil
    /// when it has no transactions.
    static func renewalInfo(
        of originalTransactionId: String, in contents: Contents, _ signedDate: Int64
    ) -> (FakePayloads.RenewalInfo, status: Int)? {
        guard let latest = latestPeriod(of: originalTransactionId, in: contents) else { return nil }
        let state = contents.renewals[originalTransactionId] ?? RenewalState()
        let info = FakePayloads.RenewalInfo(
            originalTransactionId: originalTransactionId,
            productId: latest.purchase.productId,
            autoRenewProductId: state.autoRenewProductId ?? latest.purchase.productId,
            autoRenewStatus: state.autoRenewStatus,
            expirationIntent: state.expirationIntent,
            isInBillingRetryPeriod: state.billingRetry,
            gracePeriodExpiresDate: state.billingRetry ? state.gracePeriodExpiresDate : nil,
            priceIncreaseStatus: state.priceIncreaseStatus,
            renewalDate: latest.purchase.expiresDate,
            recentSubscriptionStartDate: recentStart(of: originalTransactionId, in: contents),
            environment: latest.purchase.environment,
            signedDate: signedDate
        )
        let status =
            latest.purchase.revocationDate != nil ? 5
            : state.expirationIntent != nil ? 2
            : state.billingRetry ? ((state.gracePeriodExpiresDate ?? 0) > signedDate ? 4 : 3) : 1
        return (info, status)
    }

    /// The start of the latest run of periods without a lapse of 60 days or more.
    static func recentStart(of originalTransactionId: String, in contents: Contents) -> Int64 {
        let periods = contents.purchases.filter { $0.originalTransactionId == originalTransactionId }
            .map { (start: $0.purchase.purchaseDate ?? 0, end: $0.purchase.expiresDate) }
            .sorted { $0.start < $1.start }
        guard var start = periods.last?.start else { return 0 }
        for (earlier, later) in zip(periods.dropLast(), periods.dropFirst()).reversed() {
            guard let end = earlier.end, later.start - end < lapseIgnoredMilliseconds else { break }
            start = earlier.start
        }
        return start
    }
}
