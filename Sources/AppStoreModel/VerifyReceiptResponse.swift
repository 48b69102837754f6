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
}

extension VerifyReceiptResponse: JSONModel {
    public static let fields: JSONFields<Self> = [
        .required("status", \.status, as: .native, missing: "no status in the answer"),
        .value("environment", \.environment),
        .value("is_retryable", \.isRetryable, as: .native, alternativeKeys: ["is-retryable"]),
        .value("receipt", \.receipt),
        .value("latest_receipt_info", \.latestReceiptInfo),
        .value("pending_renewal_info", \.pendingRenewalInfo),
        .value("latest_receipt", \.latestReceipt),
    ]

    public static var blank: Self { VerifyReceiptResponse(status: 0) }
}
