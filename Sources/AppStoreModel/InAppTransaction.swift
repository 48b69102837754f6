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
}

/// Written in Apple's shape: every value a string.
extension InAppTransaction: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("quantity", \.quantity),
        .value("product_id", \.productId),
        .value("transaction_id", \.transactionId),
        .value("original_transaction_id", \.originalTransactionId),
        .value("web_order_line_item_id", \.webOrderLineItemId),
        .value("purchase_date_ms", \.purchaseDateMs),
        .value("original_purchase_date_ms", \.originalPurchaseDateMs),
        .value("expires_date_ms", \.expiresDateMs),
        .value("cancellation_date_ms", \.cancellationDateMs),
        .value("cancellation_reason", \.cancellationReason),
        .value("is_trial_period", \.isTrialPeriod),
        .value("is_in_intro_offer_period", \.isInIntroOfferPeriod),
        .value("in_app_ownership_type", \.inAppOwnershipType),
    ]

    public static var blank: Self {
        InAppTransaction(quantity: nil, productId: nil, transactionId: nil, purchaseDateMs: nil)
    }
}
