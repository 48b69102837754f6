import ReceiptRules

/// What a worker writes back for one job (one element of `receipt_complete()`'s argument).
public struct JobOutcome: Sendable, Encodable, Hashable {
    public enum Kind: String, Sendable, Encodable, Hashable {
        /// Credit the first available candidate; the ledger may still turn it into already_credited or
        /// owned_by_other_user.
        case verified
        case rejected
        /// No verdict yet; costs the attempt.
        case retry
        /// Our configuration is wrong (21000, 21004): no verdict, and the attempt is given back.
        case configError = "config_error"
    }

    public var lease: Lease
    public var kind: Kind
    public var reason: RejectionReason?
    public var error: String?
    public var appleStatus: Int?
    public var environment: PurchaseEnvironment?
    public var candidates: [Purchase]
    public var cancelled: [Purchase]
    public var retryInSeconds: Double?
    /// The workers' MAX_ATTEMPTS, for jobs without their own max_attempts.
    public var maxAttempts: Int

    public init(
        lease: Lease,
        kind: Kind,
        reason: RejectionReason? = nil,
        error: String? = nil,
        appleStatus: Int? = nil,
        environment: PurchaseEnvironment? = nil,
        candidates: [Purchase] = [],
        cancelled: [Purchase] = [],
        retryInSeconds: Double? = nil,
        maxAttempts: Int
    ) {
        self.lease = lease
        self.kind = kind
        self.reason = reason
        self.error = error
        self.appleStatus = appleStatus
        self.environment = environment
        self.candidates = candidates
        self.cancelled = cancelled
        self.retryInSeconds = retryInSeconds
        self.maxAttempts = maxAttempts
    }

    enum CodingKeys: String, CodingKey {
        case id, leaseToken = "lease_token", outcome, reason, error, appleStatus = "apple_status", environment
        case result, candidates, cancelled, retryInSeconds = "retry_in_seconds", maxAttempts = "max_attempts"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lease.jobId, forKey: .id)
        try container.encode(lease.token, forKey: .leaseToken)
        try container.encode(kind, forKey: .outcome)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encodeIfPresent(appleStatus, forKey: .appleStatus)
        try container.encodeIfPresent(environment, forKey: .environment)
        try container.encode(candidates.map(PurchaseRecord.init), forKey: .candidates)
        try container.encode(cancelled.map(PurchaseRecord.init), forKey: .cancelled)
        try container.encodeIfPresent(retryInSeconds, forKey: .retryInSeconds)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        if kind == .verified || kind == .rejected {
            try container.encode(
                VerdictRecord(
                    environment: environment,
                    appleStatus: appleStatus,
                    reason: reason,
                    detail: kind == .rejected ? error : nil,
                    credited: kind == .verified ? candidates.first.map(PurchaseRecord.init) : nil
                ),
                forKey: .result
            )
        }
    }
}

/// `receipt_jobs.result`: what the API layer reads about a verdict.
struct VerdictRecord: Encodable, Hashable {
    var environment: PurchaseEnvironment?
    var appleStatus: Int?
    var reason: RejectionReason?
    var detail: String?
    /// The purchase credited (receipt_credit() replaces it when a later candidate was the one credited).
    var credited: PurchaseRecord?

    enum CodingKeys: String, CodingKey {
        case environment, appleStatus = "apple_status", reason, detail, credited
    }
}

/// A purchase as the SQL functions read it (Apple's field names, dates in milliseconds).
struct PurchaseRecord: Encodable, Hashable {
    var purchase: Purchase

    init(_ purchase: Purchase) { self.purchase = purchase }

    enum CodingKeys: String, CodingKey {
        case transactionId = "transaction_id", originalTransactionId = "original_transaction_id"
        case webOrderLineItemId = "web_order_line_item_id", productId = "product_id", quantity
        case purchaseDateMs = "purchase_date_ms", expiresDateMs = "expires_date_ms"
        case cancellationDateMs = "cancellation_date_ms", cancellationReason = "cancellation_reason"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(purchase.transactionId, forKey: .transactionId)
        try container.encode(purchase.originalTransactionId, forKey: .originalTransactionId)
        try container.encodeIfPresent(purchase.webOrderLineItemId, forKey: .webOrderLineItemId)
        try container.encode(purchase.productId, forKey: .productId)
        try container.encode(purchase.quantity, forKey: .quantity)
        try container.encodeIfPresent(purchase.purchaseDateMs, forKey: .purchaseDateMs)
        try container.encodeIfPresent(purchase.expiresDateMs, forKey: .expiresDateMs)
        try container.encodeIfPresent(purchase.cancellationDateMs, forKey: .cancellationDateMs)
        try container.encodeIfPresent(purchase.cancellationReason, forKey: .cancellationReason)
    }
}
