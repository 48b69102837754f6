import AppStoreModel

extension PurchaseStore {
    /// Get All Subscription Statuses for the customer who owns `transactionId` (of `bundleId` in `environment`): each
    /// of the customer's auto-renewable chains with its status, its latest transaction and its renewal info signed
    /// at `signedDate`, in one subscription group (the fake's transactions all name group 21000000). Nil when the
    /// transaction is not there; the same story the notifications tell (`renewalInfo(of:in:_:)`).
    func subscriptionStatuses(
        of transactionId: String, environment: String, bundleId: String, signedDate: Int64
    ) throws(FakeAppStoreError) -> [SubscriptionStatusesResponse.Group]? {
        guard let owner = transaction(transactionId, environment: environment, bundleId: bundleId) else { return nil }
        let contents = contents.withLock { $0 }
        var chains: [String] = []
        for signed in contents.purchases
        where signed.customerId == owner.customerId && signed.purchase.environment == environment
            && signed.purchase.bundleId == bundleId && signed.purchase.type == Self.autoRenewable
            && !chains.contains(signed.originalTransactionId)
        {
            chains.append(signed.originalTransactionId)
        }
        var last: [SubscriptionStatusesResponse.LastTransaction] = []
        for original in chains {
            guard let latest = Self.latestPeriod(of: original, in: contents),
                let (renewal, status) = Self.renewalInfo(of: original, in: contents, signedDate)
            else { continue }
            last.append(
                SubscriptionStatusesResponse.LastTransaction(
                    originalTransactionId: original, status: status, signedTransactionInfo: latest.signedTransaction,
                    signedRenewalInfo: try sign(renewal)
                )
            )
        }
        return last.isEmpty ? [] : [.init(subscriptionGroupIdentifier: "21000000", lastTransactions: last)]
    }
}
