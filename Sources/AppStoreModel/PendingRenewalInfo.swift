/// One entry of `pending_renewal_info`. Read for completeness; the rules do not need it.
public struct PendingRenewalInfo: Codable, Sendable, Equatable {
    public var productId: String?
    public var autoRenewProductId: String?
    public var originalTransactionId: String?
    public var autoRenewStatus: String?

    public init(
        productId: String?,
        autoRenewProductId: String?,
        originalTransactionId: String?,
        autoRenewStatus: String?
    ) {
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.originalTransactionId = originalTransactionId
        self.autoRenewStatus = autoRenewStatus
    }
}

extension PendingRenewalInfo: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("product_id", \.productId),
        .value("auto_renew_product_id", \.autoRenewProductId),
        .value("original_transaction_id", \.originalTransactionId),
        .value("auto_renew_status", \.autoRenewStatus),
    ]

    public static var blank: Self {
        PendingRenewalInfo(productId: nil, autoRenewProductId: nil, originalTransactionId: nil, autoRenewStatus: nil)
    }
}
