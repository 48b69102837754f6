/// The answer to Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the purchases of the order on the customer's
/// e-mailed receipt.
public struct OrderLookupResponse: Codable, Sendable, Hashable {
    /// 0: the order id is valid; 1: it is not (unknown to this environment, or not this app's).
    public var status: Int?
    /// The order's transactions, each signed by the App Store (JWS).
    public var signedTransactions: [String]?

    public static let valid = 0
    public static let invalid = 1

    public init(status: Int?, signedTransactions: [String]? = nil) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}
