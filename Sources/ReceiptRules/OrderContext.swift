/// What the API layer said about the order a receipt pays for, as stored on the job.
public struct OrderContext: Sendable, Hashable {
    public var jobId: Int64
    public var orderId: String
    public var userId: String
    /// The product the order sold, from the API layer's own order record (never from the client).
    public var productId: String
    /// The transaction the client says paid for the order, if it reported one.
    public var clientTransactionId: String?
    /// The app the order belongs to.
    public var bundleId: String
    /// When the order was made, if the API layer gave it.
    public var orderCreatedAtMs: Int64?
    /// When the job was enqueued; stands in for the order time when none was given.
    public var jobCreatedAtMs: Int64
    /// Which attempt this is, counting from 1.
    public var attempt: Int
    /// The appAccountToken the order expects (a UUID, lowercase), when the API layer gave one.
    public var appAccountToken: String?

    public init(
        jobId: Int64,
        orderId: String,
        userId: String,
        productId: String,
        clientTransactionId: String? = nil,
        bundleId: String,
        orderCreatedAtMs: Int64? = nil,
        jobCreatedAtMs: Int64,
        attempt: Int = 1,
        appAccountToken: String? = nil
    ) {
        self.jobId = jobId
        self.orderId = orderId
        self.userId = userId
        self.productId = productId
        self.clientTransactionId = clientTransactionId
        self.bundleId = bundleId
        self.orderCreatedAtMs = orderCreatedAtMs
        self.jobCreatedAtMs = jobCreatedAtMs
        self.attempt = attempt
        self.appAccountToken = appAccountToken
    }

    /// The moment expiry is judged against: the order's time, else the job's; never the verification time,
    /// which an Apple outage can delay.
    public var orderTimeMs: Int64 { orderCreatedAtMs ?? jobCreatedAtMs }
}
