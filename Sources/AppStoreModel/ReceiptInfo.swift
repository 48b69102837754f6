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
}

extension ReceiptInfo: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("bundle_id", \.bundleId),
        .value("application_version", \.applicationVersion),
        .value("original_application_version", \.originalApplicationVersion),
        .value("receipt_type", \.receiptType),
        .value("receipt_creation_date_ms", \.receiptCreationDateMs),
        .value("request_date_ms", \.requestDateMs),
        .value("in_app", \.inApp),
    ]

    public static var blank: Self { ReceiptInfo(bundleId: nil, inApp: nil) }
}
