/// Apple's verifyReceipt answer, as far as this service reads it. Unknown fields are ignored; ids and numbers are
/// accepted as strings or numbers. Encoding writes Apple's own shapes (numbers as strings inside the receipt).
public struct VerifyReceiptResponse: Codable, Sendable, Equatable {
    public var status: Int
    /// "Production" or "Sandbox".
    public var environment: String?
    /// Apple's hint that a 21100–21199 status is worth retrying.
    public var isRetryable: Bool?
    public var receipt: ReceiptInfo?
    /// Present for receipts with auto-renewable subscriptions.
    public var latestReceiptInfo: [InAppTransaction]?
    public var pendingRenewalInfo: [PendingRenewalInfo]?
    /// The newest base64 receipt. Never stored by this service (it is large and carries nothing the rules need).
    public var latestReceipt: String?

    public init(
        status: Int,
        environment: String? = nil,
        isRetryable: Bool? = nil,
        receipt: ReceiptInfo? = nil,
        latestReceiptInfo: [InAppTransaction]? = nil,
        pendingRenewalInfo: [PendingRenewalInfo]? = nil,
        latestReceipt: String? = nil
    ) {
        self.status = status
        self.environment = environment
        self.isRetryable = isRetryable
        self.receipt = receipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
        self.latestReceipt = latestReceipt
    }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case isRetryable = "is_retryable"
        case isRetryableHyphen = "is-retryable"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
        case latestReceipt = "latest_receipt"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let status = try container.decodeLenientInt64(forKey: .status), let small = Int(exactly: status) else {
            throw DecodingError.keyNotFound(
                CodingKeys.status, .init(codingPath: container.codingPath, debugDescription: "no status in the answer")
            )
        }
        self.status = small
        environment = try container.decodeLenientString(forKey: .environment)
        isRetryable =
            try container.decodeLenientBool(forKey: .isRetryable)
            ?? container.decodeLenientBool(forKey: .isRetryableHyphen)
        receipt = try container.decodeIfPresent(ReceiptInfo.self, forKey: .receipt)
        latestReceiptInfo = try container.decodeIfPresent([InAppTransaction].self, forKey: .latestReceiptInfo)
        pendingRenewalInfo = try container.decodeIfPresent([PendingRenewalInfo].self, forKey: .pendingRenewalInfo)
        latestReceipt = try container.decodeLenientString(forKey: .latestReceipt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(environment, forKey: .environment)
        try container.encodeIfPresent(isRetryable, forKey: .isRetryable)
        try container.encodeIfPresent(receipt, forKey: .receipt)
        try container.encodeIfPresent(latestReceiptInfo, forKey: .latestReceiptInfo)
        try container.encodeIfPresent(pendingRenewalInfo, forKey: .pendingRenewalInfo)
        try container.encodeIfPresent(latestReceipt, forKey: .latestReceipt)
    }
}

/// The `receipt` object of a verifyReceipt answer.
public struct ReceiptInfo: Codable, Sendable, Equatable {
    public var bundleId: String?
    public var applicationVersion: String?
    public var originalApplicationVersion: String?
    /// "Production", "ProductionSandbox", …
    public var receiptType: String?
    public var receiptCreationDateMs: Int64?
    public var requestDateMs: Int64?
    /// nil when the field is absent (distinct from an empty list).
    public var inApp: [InAppTransaction]?

    public init(
        bundleId: String?,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        receiptType: String? = nil,
        receiptCreationDateMs: Int64? = nil,
        requestDateMs: Int64? = nil,
        inApp: [InAppTransaction]?
    ) {
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.receiptType = receiptType
        self.receiptCreationDateMs = receiptCreationDateMs
        self.requestDateMs = requestDateMs
        self.inApp = inApp
    }

    enum CodingKeys: String, CodingKey {
        case bundleId = "bundle_id"
        case applicationVersion = "application_version"
        case originalApplicationVersion = "original_application_version"
        case receiptType = "receipt_type"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case requestDateMs = "request_date_ms"
        case inApp = "in_app"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleId = try container.decodeLenientString(forKey: .bundleId)
        applicationVersion = try container.decodeLenientString(forKey: .applicationVersion)
        originalApplicationVersion = try container.decodeLenientString(forKey: .originalApplicationVersion)
        receiptType = try container.decodeLenientString(forKey: .receiptType)
        receiptCreationDateMs = try container.decodeLenientInt64(forKey: .receiptCreationDateMs)
        requestDateMs = try container.decodeLenientInt64(forKey: .requestDateMs)
        inApp = try container.decodeIfPresent([InAppTransaction].self, forKey: .inApp)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(bundleId, forKey: .bundleId)
        try container.encodeIfPresent(applicationVersion, forKey: .applicationVersion)
        try container.encodeIfPresent(originalApplicationVersion, forKey: .originalApplicationVersion)
        try container.encodeIfPresent(receiptType, forKey: .receiptType)
        try container.encodeIfPresent(receiptCreationDateMs.map(String.init), forKey: .receiptCreationDateMs)
        try container.encodeIfPresent(requestDateMs.map(String.init), forKey: .requestDateMs)
        try container.encodeIfPresent(inApp, forKey: .inApp)
    }
}

/// One entry of `receipt.in_app` or `latest_receipt_info`.
public struct InAppTransaction: Codable, Sendable, Equatable {
    public var quantity: Int?
    public var productId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var purchaseDateMs: Int64?
    public var originalPurchaseDateMs: Int64?
    public var expiresDateMs: Int64?
    public var cancellationDateMs: Int64?
    public var cancellationReason: String?
    public var isTrialPeriod: Bool?
    public var isInIntroOfferPeriod: Bool?
    public var inAppOwnershipType: String?

    public init(
        quantity: Int? = 1,
        productId: String?,
        transactionId: String?,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        purchaseDateMs: Int64?,
        originalPurchaseDateMs: Int64? = nil,
        expiresDateMs: Int64? = nil,
        cancellationDateMs: Int64? = nil,
        cancellationReason: String? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil,
        inAppOwnershipType: String? = nil
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.purchaseDateMs = purchaseDateMs
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.inAppOwnershipType = inAppOwnershipType
    }

    enum CodingKeys: String, CodingKey {
        case quantity
        case productId = "product_id"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case webOrderLineItemId = "web_order_line_item_id"
        case purchaseDateMs = "purchase_date_ms"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case isTrialPeriod = "is_trial_period"
        case isInIntroOfferPeriod = "is_in_intro_offer_period"
        case inAppOwnershipType = "in_app_ownership_type"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        quantity = try container.decodeLenientInt64(forKey: .quantity).flatMap { Int(exactly: $0) }
        productId = try container.decodeLenientString(forKey: .productId)
        transactionId = try container.decodeLenientString(forKey: .transactionId)
        originalTransactionId = try container.decodeLenientString(forKey: .originalTransactionId)
        webOrderLineItemId = try container.decodeLenientString(forKey: .webOrderLineItemId)
        purchaseDateMs = try container.decodeLenientInt64(forKey: .purchaseDateMs)
        originalPurchaseDateMs = try container.decodeLenientInt64(forKey: .originalPurchaseDateMs)
        expiresDateMs = try container.decodeLenientInt64(forKey: .expiresDateMs)
        cancellationDateMs = try container.decodeLenientInt64(forKey: .cancellationDateMs)
        cancellationReason = try container.decodeLenientString(forKey: .cancellationReason)
        isTrialPeriod = try container.decodeLenientBool(forKey: .isTrialPeriod)
        isInIntroOfferPeriod = try container.decodeLenientBool(forKey: .isInIntroOfferPeriod)
        inAppOwnershipType = try container.decodeLenientString(forKey: .inAppOwnershipType)
    }

    /// Apple's shape: every value a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(quantity.map(String.init), forKey: .quantity)
        try container.encodeIfPresent(productId, forKey: .productId)
        try container.encodeIfPresent(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try container.encodeIfPresent(webOrderLineItemId, forKey: .webOrderLineItemId)
        try container.encodeIfPresent(purchaseDateMs.map(String.init), forKey: .purchaseDateMs)
        try container.encodeIfPresent(originalPurchaseDateMs.map(String.init), forKey: .originalPurchaseDateMs)
        try container.encodeIfPresent(expiresDateMs.map(String.init), forKey: .expiresDateMs)
        try container.encodeIfPresent(cancellationDateMs.map(String.init), forKey: .cancellationDateMs)
        try container.encodeIfPresent(cancellationReason, forKey: .cancellationReason)
        try container.encodeIfPresent(isTrialPeriod.map(String.init), forKey: .isTrialPeriod)
        try container.encodeIfPresent(isInIntroOfferPeriod.map(String.init), forKey: .isInIntroOfferPeriod)
        try container.encodeIfPresent(inAppOwnershipType, forKey: .inAppOwnershipType)
    }
}

/// One entry of `pending_renewal_info`. Read for completeness; the rules do not need it.
public struct PendingRenewalInfo: Codable, Sendable, Equatable {
    public var productId: String?
    public var autoRenewProductId: String?
    public var originalTransactionId: String?
    public var autoRenewStatus: String?

    public init(productId: String?, autoRenewProductId: String?, originalTransactionId: String?, autoRenewStatus: String?) {
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.originalTransactionId = originalTransactionId
        self.autoRenewStatus = autoRenewStatus
    }

    enum CodingKeys: String, CodingKey {
        case productId = "product_id"
        case autoRenewProductId = "auto_renew_product_id"
        case originalTransactionId = "original_transaction_id"
        case autoRenewStatus = "auto_renew_status"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        productId = try container.decodeLenientString(forKey: .productId)
        autoRenewProductId = try container.decodeLenientString(forKey: .autoRenewProductId)
        originalTransactionId = try container.decodeLenientString(forKey: .originalTransactionId)
        autoRenewStatus = try container.decodeLenientString(forKey: .autoRenewStatus)
    }
}
