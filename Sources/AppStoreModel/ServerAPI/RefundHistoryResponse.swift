/// One page of Get Refund History v2 (`GET /inApps/v2/refund/lookup/{transactionId}?revision=…`): the customer's
/// refunded transactions for the app, up to 20 a page, oldest revocation first.
public struct RefundHistoryResponse: Codable, Sendable, Hashable {
    /// The token that asks for the next page (sent back as the `revision` query parameter).
    public var revision: String?
    /// Whether another page follows.
    public var hasMore: Bool?
    /// The page's refunded transactions, each signed by the App Store (JWS).
    public var signedTransactions: [String]?

    public init(revision: String? = nil, hasMore: Bool? = nil, signedTransactions: [String]? = nil) {
        self.revision = revision
        self.hasMore = hasMore
        self.signedTransactions = signedTransactions
    }
}
