/// The columns of Apple's Summary Sales Report (Sales and Trends: `reportType` SALES, `reportSubType` SUMMARY), by
/// their header names, in the order Apple writes them. The one list of them: the parser reads a file by these names
/// (in whatever order its header has them), the fake App Store writes its reports with them.
///
/// Apple's reference: App Store Connect Help, Reporting, "Summary Sales Report". A file is tab-separated text, one
/// header line, then one line per aggregate (same product, country, currency, price, promo code, ... in the period),
/// served gzip-compressed. Units are negative for refunds; a refund's Customer Price is negative too, its Developer
/// Proceeds positive. Dates are MM/DD/YYYY.
public enum SalesReportColumn: String, CaseIterable, Sendable {
    case provider = "Provider"
    case providerCountry = "Provider Country"
    /// For an in-app purchase, its product ID as set in App Store Connect.
    case sku = "SKU"
    case developer = "Developer"
    case title = "Title"
    case version = "Version"
    /// What was sold (an app, an update, an in-app purchase, ...): `SalesReportProductType`.
    case productTypeIdentifier = "Product Type Identifier"
    /// Aggregated number of units; negative for refunds.
    case units = "Units"
    /// Proceeds per unit, in `currencyOfProceeds`.
    case developerProceeds = "Developer Proceeds"
    case beginDate = "Begin Date"
    case endDate = "End Date"
    case customerCurrency = "Customer Currency"
    /// Two-letter ISO code of the storefront's country or region.
    case countryCode = "Country Code"
    case currencyOfProceeds = "Currency of Proceeds"
    case appleIdentifier = "Apple Identifier"
    /// Price per unit charged to the customer, tax included, in `customerCurrency`; negative for refunds.
    case customerPrice = "Customer Price"
    case promoCode = "Promo Code"
    /// For an in-app purchase, the SKU of its app.
    case parentIdentifier = "Parent Identifier"
    case subscription = "Subscription"
    case period = "Period"
    case category = "Category"
    case cmb = "CMB"
    case device = "Device"
    case supportedPlatforms = "Supported Platforms"
    case proceedsReason = "Proceeds Reason"
    case preservedPricing = "Preserved Pricing"
    case client = "Client"
    case orderType = "Order Type"

    /// The columns a file must have to be read as a Summary Sales Report: what names a sale, where, at what price and
    /// how many. The others are read when present (Apple added columns over the report's versions) and empty when
    /// not.
    public static let required: [SalesReportColumn] = [
        .sku, .productTypeIdentifier, .units, .developerProceeds, .beginDate, .endDate, .customerCurrency,
        .countryCode, .currencyOfProceeds, .appleIdentifier, .customerPrice,
    ]
}

/// Apple's product type identifiers (App Store Connect Help, Reporting, "Product type identifiers") that a Summary
/// Sales Report uses for in-app purchases and subscriptions.
public enum SalesReportProductType {
    /// In-App Purchase (iOS, iPadOS, visionOS): consumables and non-consumables.
    public static let inAppPurchase = "IA1"
    /// In-App Purchase on the Mac.
    public static let inAppPurchaseMac = "IA1-M"
    /// Non-renewing subscription (iOS, iPadOS, visionOS).
    public static let nonRenewingSubscription = "IA9"
    /// Subscription on the Mac.
    public static let subscriptionMac = "IA9-M"
    /// Auto-renewable subscription (iOS, iPadOS, visionOS).
    public static let autoRenewableSubscription = "IAY"
    /// Auto-renewable subscription on the Mac.
    public static let autoRenewableSubscriptionMac = "IAY-M"
    /// Free subscription (iOS): in Apple's earlier reporting instructions, no longer in the current table.
    public static let freeSubscription = "IAC"
    /// In-App Purchase (Mac).
    public static let macInAppPurchase = "FI1"

    /// The identifiers of sales of in-app purchases and subscriptions. IA3, a restored non-consumable, is not one:
    /// a restore sells nothing.
    public static let inApp: Set<String> = [
        inAppPurchase, inAppPurchaseMac, nonRenewingSubscription, subscriptionMac, autoRenewableSubscription,
        autoRenewableSubscriptionMac, freeSubscription, macInAppPurchase,
    ]
}
