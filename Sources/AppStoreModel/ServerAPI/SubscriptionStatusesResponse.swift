/// The App Store Server API's answer to Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`):
/// every auto-renewable subscription of the customer who owns the transaction, by subscription group, each chain's
/// latest transaction and renewal info signed by the App Store.
public struct SubscriptionStatusesResponse: Codable, Sendable, Hashable {
    public var environment: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]?

    /// One subscription group's chains.
    public struct Group: Codable, Sendable, Hashable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]?

        public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransaction]?) {
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.lastTransactions = lastTransactions
        }
    }

    /// One purchase chain: 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked; its latest
    /// transaction and its renewal info (JWS: verify both before trusting them).
    public struct LastTransaction: Codable, Sendable, Hashable {
        public var originalTransactionId: String?
        public var status: Int?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?

        public init(
            originalTransactionId: String?, status: Int?, signedTransactionInfo: String?, signedRenewalInfo: String?
        ) {
            self.originalTransactionId = originalTransactionId
            self.status = status
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }

    public init(environment: String?, bundleId: String?, appAppleId: Int64?, data: [Group]?) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}
