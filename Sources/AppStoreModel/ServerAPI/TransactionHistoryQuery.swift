/// The filters and order of a Get Transaction History v2 request (`GET /inApps/v2/history/{transactionId}`), as
/// Apple's query parameters. Every page of one reading carries the same query: Apple's `revision` continues the
/// reading it came from, and the next page is asked with the query it was made for.
public struct TransactionHistoryQuery: Sendable, Hashable {
    /// Apple's `sort`: by each transaction's most recent modification (a purchase, a refund, a revocation).
    public enum Order: String, Sendable, Hashable, CaseIterable {
        /// Oldest first: Apple's default.
        case ascending = "ASCENDING"
        /// Most recently modified first.
        case descending = "DESCENDING"
    }

    /// nil leaves Apple's default (ascending).
    public var sort: Order?
    /// Only these products (`productId`, once per product); empty: every product.
    public var productIds: [String]
    /// Only transactions purchased at or after this time (`startDate`, milliseconds since 1970).
    public var startDate: Int64?
    /// Only transactions purchased before this time (`endDate`, milliseconds since 1970).
    public var endDate: Int64?

    public init(sort: Order? = nil, productIds: [String] = [], startDate: Int64? = nil, endDate: Int64? = nil) {
        self.sort = sort
        self.productIds = productIds
        self.startDate = startDate
        self.endDate = endDate
    }

    /// The query parameters, names and values unencoded, in a fixed order.
    public var parameters: [(name: String, value: String)] {
        var parameters: [(name: String, value: String)] = []
        if let startDate { parameters.append(("startDate", String(startDate))) }
        if let endDate { parameters.append(("endDate", String(endDate))) }
        for productId in productIds { parameters.append(("productId", productId)) }
        if let sort { parameters.append(("sort", sort.rawValue)) }
        return parameters
    }
}
