import ReceiptRules

/// What a job asks the workers to verify (`receipt_jobs.kind`).
public enum JobKind: String, Sendable, Hashable, CaseIterable {
    /// An app receipt (base64 PKCS#7), verified with verifyReceipt or the App Store Server API.
    case receipt
    /// A StoreKit 2 signed transaction (JWS), verified locally and confirmed with the App Store Server API.
    case signedTransaction = "signed_transaction"
    /// A transaction id alone, looked up with the App Store Server API.
    case transactionId = "transaction_id"
    /// StoreKit's app transaction (JWS, in `signedTransaction`), verified locally and recorded once per
    /// appTransactionId (`enqueue_app_transaction()`).
    case appTransaction = "app_transaction"
}

/// A job a worker holds under a lease.
public struct ClaimedJob: Sendable, Hashable {
    public var id: Int64
    /// Proves the lease is still this worker's when the result is written.
    public var leaseToken: String
    public var kind: JobKind
    public var order: OrderContext
    /// The receipt of a `receipt` job; nil when retention cleared it.
    public var receiptData: String?
    /// The JWS of a `signed_transaction` or `app_transaction` job; nil when retention cleared it.
    public var signedTransaction: String?
    /// The first characters of the input's SHA-256: what logs show instead of the receipt or signed transaction.
    public var receiptHash: String

    public init(
        id: Int64, leaseToken: String, kind: JobKind = .receipt, order: OrderContext, receiptData: String?,
        signedTransaction: String? = nil, receiptHash: String
    ) {
        self.id = id
        self.leaseToken = leaseToken
        self.kind = kind
        self.order = order
        self.receiptData = receiptData
        self.signedTransaction = signedTransaction
        self.receiptHash = receiptHash
    }

    /// The job without its input: what a worker keeps while the input is on its way to Apple (it is sent from the
    /// request body, and with thousands of calls in flight a second copy of every receipt would add up).
    public var withoutInput: ClaimedJob {
        var job = self
        job.receiptData = nil
        job.signedTransaction = nil
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
