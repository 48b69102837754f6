import ReceiptRules

/// A job a worker holds under a lease.
public struct ClaimedJob: Sendable, Hashable {
    public var id: Int64
    /// Proves the lease is still this worker's when the result is written.
    public var leaseToken: String
    public var order: OrderContext
    /// nil when retention cleared it.
    public var receiptData: String?
    /// The first characters of the receipt's SHA-256: what logs show instead of the receipt.
    public var receiptHash: String

    public init(id: Int64, leaseToken: String, order: OrderContext, receiptData: String?, receiptHash: String) {
        self.id = id
        self.leaseToken = leaseToken
        self.order = order
        self.receiptData = receiptData
        self.receiptHash = receiptHash
    }

    /// The job without its receipt: what a worker keeps while the receipt is on its way to Apple (it is sent from
    /// the request body, and with thousands of calls in flight a second copy of every receipt would add up).
    public var withoutReceiptData: ClaimedJob {
        var job = self
        job.receiptData = nil
        return job
    }

    /// A job's hold on the queue: what lease renewal and release need.
    public var lease: Lease { Lease(jobId: id, token: leaseToken) }
}

public struct Lease: Sendable, Hashable {
    public var jobId: Int64
    public var token: String

    public init(jobId: Int64, token: String) {
        self.jobId = jobId
        self.token = token
    }
}
