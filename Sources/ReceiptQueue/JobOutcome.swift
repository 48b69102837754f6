import JSONText
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
    /// For a retry caused by a failed call: the failure's cause (`timeout`, `connection`, `http_status`, ...), for
    /// `retries_total{cause}`. Not written to the database.
    public var failureCause: String?
    /// The workers' MAX_ATTEMPTS, for jobs without their own max_attempts.
    public var maxAttempts: Int
    /// Issue 37: other purchases Apple's answer shows that carry an appAccountToken (`VerdictRules.seenPurchases`),
    /// offered to `receipt_seen_credit()` once the verdict is written. Not part of `receipt_complete()`'s argument.
    public var seen: [Purchase] = []
    /// A verified app transaction (kind `app_transaction`): recorded in place of crediting candidates.
    public var appTransaction: AppTransactionRecord?

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
        failureCause: String? = nil,
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
        self.failureCause = failureCause
        self.maxAttempts = maxAttempts
    }

    enum CodingKeys: String, CodingKey {
        case id, leaseToken = "lease_token", outcome, reason, error, appleStatus = "apple_status", environment
        case result, candidates, cancelled, retryInSeconds = "retry_in_seconds", maxAttempts = "max_attempts"
        case appTransaction = "app_transaction"
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
        if !candidates.isEmpty { try container.encode(candidates.map(PurchaseRecord.init), forKey: .candidates) }
        if !cancelled.isEmpty { try container.encode(cancelled.map(PurchaseRecord.init), forKey: .cancelled) }
        try container.encodeIfPresent(retryInSeconds, forKey: .retryInSeconds)
        if kind == .retry { try container.encode(maxAttempts, forKey: .maxAttempts) }
        if kind == .verified || kind == .rejected {
            try container.encode(verdictRecord, forKey: .result)
        }
        try container.encodeIfPresent(appTransaction, forKey: .appTransaction)
    }

    /// `result`, for verdicts. A verified job's `credited` purchase is added by receipt_complete() (the first
    /// candidate, or the one receipt_credit() credits), with its credit key.
    fileprivate var verdictRecord: VerdictRecord {
        VerdictRecord(
            environment: environment,
            appleStatus: appleStatus,
            reason: reason,
            detail: kind == .rejected ? error : nil
        )
    }
}

/// `receipt_jobs.result`: what the API layer reads about a verdict.
struct VerdictRecord: Encodable, Hashable {
    var environment: PurchaseEnvironment?
    var appleStatus: Int?
    var reason: RejectionReason?
    var detail: String?

    enum CodingKeys: String, CodingKey {
        case environment, appleStatus = "apple_status", reason, detail
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
        case inAppOwnershipType = "in_app_ownership_type"
        case priceMilliunits = "price_milliunits", currency, storefront, offerType = "offer_type"
        case offerDiscountType = "offer_discount_type", transactionReason = "transaction_reason"
        case billingPlanType = "billing_plan_type", signedDateMs = "signed_date_ms", storefrontId = "storefront_id"
        /// Only in `receipt_seen_credit()`'s argument.
        case appAccountToken = "app_account_token"
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
        try container.encodeIfPresent(purchase.inAppOwnershipType, forKey: .inAppOwnershipType)
        try container.encodeIfPresent(purchase.priceMilliunits, forKey: .priceMilliunits)
        try container.encodeIfPresent(purchase.currency, forKey: .currency)
        try container.encodeIfPresent(purchase.storefront, forKey: .storefront)
        try container.encodeIfPresent(purchase.offerType, forKey: .offerType)
        try container.encodeIfPresent(purchase.offerDiscountType, forKey: .offerDiscountType)
        try container.encodeIfPresent(purchase.transactionReason, forKey: .transactionReason)
        try container.encodeIfPresent(purchase.billingPlanType, forKey: .billingPlanType)
        try container.encodeIfPresent(purchase.signedDateMs, forKey: .signedDateMs)
        try container.encodeIfPresent(purchase.storefrontId, forKey: .storefrontId)
    }
}

// MARK: - receipt_complete()'s argument, written directly

extension JobOutcome {
    /// The JSON array `receipt_complete()` takes: the document `JSONEncoder` makes from `outcomes` (same keys, from
    /// the same `CodingKeys`, same shapes), written without Foundation's encoder because it runs for every job.
    /// Debug builds check the two against each other (`JobStore.complete`).
    public static func jsonArray(_ outcomes: [JobOutcome]) throws -> String {
        var writer = JSONTextWriter()
        writer.bytes.reserveCapacity(outcomes.count * 512)
        writer.bytes.append(UInt8(ascii: "["))
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            try outcome.write(to: &writer)
        }
        writer.bytes.append(UInt8(ascii: "]"))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private func write(to writer: inout JSONTextWriter) throws {
        writer.open()
        writer.member(CodingKeys.id, lease.jobId)
        writer.member(CodingKeys.leaseToken, lease.token)
        writer.member(CodingKeys.outcome, kind.rawValue)
        writer.member(CodingKeys.reason, reason?.rawValue)
        writer.member(CodingKeys.error, error)
        writer.member(CodingKeys.appleStatus, appleStatus.map(Int64.init))
        writer.member(CodingKeys.environment, environment?.rawValue)
        if !candidates.isEmpty {
            writer.key(CodingKeys.candidates)
            writer.array(candidates) { writer, purchase in PurchaseRecord(purchase).write(to: &writer) }
        }
        if !cancelled.isEmpty {
            writer.key(CodingKeys.cancelled)
            writer.array(cancelled) { writer, purchase in PurchaseRecord(purchase).write(to: &writer) }
        }
        if let retryInSeconds {
            guard retryInSeconds.isFinite else {
                throw EncodingError.invalidValue(retryInSeconds, .init(codingPath: [], debugDescription: "not finite"))
            }
            writer.key(CodingKeys.retryInSeconds)
            writer.bytes.append(contentsOf: "\(retryInSeconds)".utf8)
        }
        if kind == .retry { writer.member(CodingKeys.maxAttempts, Int64(maxAttempts)) }
        if kind == .verified || kind == .rejected {
            writer.key(CodingKeys.result)
            verdictRecord.write(to: &writer)
        }
        if let appTransaction {
            writer.key(CodingKeys.appTransaction)
            appTransaction.write(to: &writer)
        }
        writer.close()
    }
}

extension VerdictRecord {
    fileprivate func write(to writer: inout JSONTextWriter) {
        writer.open()
        writer.member(CodingKeys.environment, environment?.rawValue)
        writer.member(CodingKeys.appleStatus, appleStatus.map(Int64.init))
        writer.member(CodingKeys.reason, reason?.rawValue)
        writer.member(CodingKeys.detail, detail)
        writer.close()
    }
}

extension JobOutcome {
    /// `receipt_seen_credit()`'s argument: the purchases as in `candidates`, each with its `app_account_token`.
    public static func seenJSONArray(_ purchases: [Purchase]) -> String {
        var writer = JSONTextWriter()
        writer.array(purchases) { writer, purchase in PurchaseRecord(purchase).write(to: &writer, accountToken: true) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension PurchaseRecord {
    fileprivate func write(to writer: inout JSONTextWriter, accountToken: Bool = false) {
        writer.open()
        writer.member(CodingKeys.transactionId, purchase.transactionId)
        writer.member(CodingKeys.originalTransactionId, purchase.originalTransactionId)
        writer.member(CodingKeys.webOrderLineItemId, purchase.webOrderLineItemId)
        writer.member(CodingKeys.productId, purchase.productId)
        writer.member(CodingKeys.quantity, Int64(purchase.quantity))
        writer.member(CodingKeys.purchaseDateMs, purchase.purchaseDateMs)
        writer.member(CodingKeys.expiresDateMs, purchase.expiresDateMs)
        writer.member(CodingKeys.cancellationDateMs, purchase.cancellationDateMs)
        writer.member(CodingKeys.cancellationReason, purchase.cancellationReason)
        writer.member(CodingKeys.inAppOwnershipType, purchase.inAppOwnershipType)
        writer.member(CodingKeys.priceMilliunits, purchase.priceMilliunits)
        writer.member(CodingKeys.currency, purchase.currency)
        writer.member(CodingKeys.storefront, purchase.storefront)
        writer.member(CodingKeys.offerType, purchase.offerType.map(Int64.init))
        writer.member(CodingKeys.offerDiscountType, purchase.offerDiscountType)
        writer.member(CodingKeys.transactionReason, purchase.transactionReason)
        writer.member(CodingKeys.billingPlanType, purchase.billingPlanType)
        writer.member(CodingKeys.signedDateMs, purchase.signedDateMs)
        writer.member(CodingKeys.storefrontId, purchase.storefrontId)
        if accountToken { writer.member(CodingKeys.appAccountToken, purchase.appAccountToken) }
        writer.close()
    }
}
