import AppStoreModel

/// One in-app purchase record of an app receipt (attribute 17). Dates are milliseconds since 1970; an empty date in
/// the receipt is nil here.
public struct AppReceiptPurchase: Sendable, Equatable {
    /// Attribute 1701.
    public var quantity: Int?
    /// Attribute 1702.
    public var productId: String?
    /// Attribute 1703.
    public var transactionId: String?
    /// Attribute 1705.
    public var originalTransactionId: String?
    /// Attribute 1704.
    public var purchaseDate: Int64?
    /// Attribute 1706.
    public var originalPurchaseDate: Int64?
    /// Attribute 1708: present for auto-renewable subscriptions.
    public var expiresDate: Int64?
    /// Attribute 1712: set when Apple refunded or revoked the purchase.
    public var cancellationDate: Int64?
    /// Attribute 1711.
    public var webOrderLineItemId: Int64?
    /// Attribute 1713 (undocumented by Apple, present in real receipts).
    public var isTrialPeriod: Bool?
    /// Attribute 1719.
    public var isInIntroOfferPeriod: Bool?

    public init(
        quantity: Int? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = nil,
        cancellationDate: Int64? = nil,
        webOrderLineItemId: Int64? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.webOrderLineItemId = webOrderLineItemId
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
    }

    /// The purchase as verifyReceipt lists it in `in_app` and `latest_receipt_info`.
    public var transaction: InAppTransaction {
        InAppTransaction(
            quantity: quantity,
            productId: productId,
            transactionId: transactionId,
            originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId.map(String.init),
            purchaseDateMs: purchaseDate,
            originalPurchaseDateMs: originalPurchaseDate,
            expiresDateMs: expiresDate,
            cancellationDateMs: cancellationDate,
            isTrialPeriod: isTrialPeriod,
            isInIntroOfferPeriod: isInIntroOfferPeriod
        )
    }
}
