/// One page of Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}?revision=…`): the customer's
/// transactions for the app, up to 20 a page at Apple.
public struct TransactionHistoryResponse: Codable, Sendable, Hashable {
    /// The token that asks for the next page (sent back as the `revision` query parameter).
    public var revision: String?
    /// Whether another page follows.
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    /// "Production" or "Sandbox".
    public var environment: String?
    /// The page's transactions, each signed by the App Store (JWS).
    public var signedTransactions: [String]?

    public init(
        revision: String? = nil,
        hasMore: Bool? = nil,
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        environment: String? = nil,
        signedTransactions: [String]? = nil
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}
