/// The contents of an App Store app receipt (the PKCS#7 file an iOS app sends as `receipt-data`), as far as the fake
/// App Store needs them to answer like Apple. Dates are milliseconds since 1970.
public struct AppReceipt: Sendable, Equatable {
    /// Attribute 0: "Production", "ProductionSandbox", "Xcode", …
    public var environment: String?
    /// Attribute 2.
    public var bundleId: String?
    /// Attribute 3.
    public var applicationVersion: String?
    /// Attribute 19.
    public var originalApplicationVersion: String?
    /// Attribute 12, milliseconds since 1970.
    public var creationDate: Int64?
    /// Attribute 17, one per in-app purchase, in the receipt's order.
    public var purchases: [AppReceiptPurchase]

    public init(
        environment: String? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        creationDate: Int64? = nil,
        purchases: [AppReceiptPurchase] = []
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.creationDate = creationDate
        self.purchases = purchases
    }
}
