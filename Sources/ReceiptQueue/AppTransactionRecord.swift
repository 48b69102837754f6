import JSONText

/// A verified app transaction as `receipt_complete()` takes it (a `JobOutcome`'s `app_transaction`), for
/// `receipt_app_transaction_credit()`: the app's original purchase, one record per appTransactionId.
public struct AppTransactionRecord: Sendable, Encodable, Hashable {
    public var appTransactionId: String
    public var bundleId: String?
    public var appAppleId: Int64?
    public var originalApplicationVersion: String?
    public var originalPurchaseDateMs: Int64?
    public var originalPlatform: String?
    public var applicationVersion: String?
    public var preorderDateMs: Int64?
    public var receiptCreationDateMs: Int64?

    public init(
        appTransactionId: String, bundleId: String? = nil, appAppleId: Int64? = nil,
        originalApplicationVersion: String? = nil, originalPurchaseDateMs: Int64? = nil, originalPlatform: String? = nil,
        applicationVersion: String? = nil, preorderDateMs: Int64? = nil, receiptCreationDateMs: Int64? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.originalPlatform = originalPlatform
        self.applicationVersion = applicationVersion
        self.preorderDateMs = preorderDateMs
        self.receiptCreationDateMs = receiptCreationDateMs
    }

    enum CodingKeys: String, CodingKey {
        case appTransactionId = "app_transaction_id", bundleId = "bundle_id", appAppleId = "app_apple_id"
        case originalApplicationVersion = "original_application_version"
        case originalPurchaseDateMs = "original_purchase_date_ms", originalPlatform = "original_platform"
        case applicationVersion = "application_version", preorderDateMs = "preorder_date_ms"
        case receiptCreationDateMs = "receipt_creation_date_ms"
    }

    func write(to writer: inout JSONTextWriter) {
        writer.open()
        writer.member(CodingKeys.appTransactionId, appTransactionId)
        writer.member(CodingKeys.bundleId, bundleId)
        writer.member(CodingKeys.appAppleId, appAppleId)
        writer.member(CodingKeys.originalApplicationVersion, originalApplicationVersion)
        writer.member(CodingKeys.originalPurchaseDateMs, originalPurchaseDateMs)
        writer.member(CodingKeys.originalPlatform, originalPlatform)
        writer.member(CodingKeys.applicationVersion, applicationVersion)
        writer.member(CodingKeys.preorderDateMs, preorderDateMs)
        writer.member(CodingKeys.receiptCreationDateMs, receiptCreationDateMs)
        writer.close()
    }
}
