import AppStoreModel
import Foundation

/// One line of a Summary Sales Report: an aggregate of units of one product sold (or refunded) in one country, currency
/// and price during the report's period. Text as Apple wrote it; numbers checked when the report was read. Columns
/// a file does not have are empty.
public struct SalesReportLine: Sendable, Equatable {
    public var provider: String
    public var providerCountry: String
    /// For an in-app purchase, its product ID as set in App Store Connect.
    public var sku: String
    public var developer: String
    public var title: String
    public var version: String
    /// `SalesReportProductType`: IA1, IAY, ... for in-app purchases; 1F, 7, ... for apps and updates.
    public var productTypeIdentifier: String
    /// Negative on refund lines.
    public var units: Int64
    /// Proceeds per unit, decimal text as Apple gives it (".70", "0.7", "1.41"), in `currencyOfProceeds`.
    public var developerProceeds: String
    /// MM/DD/YYYY, as in the file.
    public var beginDate: String
    public var endDate: String
    /// Three-letter ISO 4217 code.
    public var customerCurrency: String
    /// Two-letter ISO 3166 code of the storefront.
    public var countryCode: String
    public var currencyOfProceeds: String
    public var appleIdentifier: String
    /// Price per unit charged to the customer, tax included, decimal text as Apple gives it; negative on refund lines.
    public var customerPrice: String
    public var promoCode: String
    /// For an in-app purchase, the SKU of its app.
    public var parentIdentifier: String
    public var subscription: String
    public var period: String
    public var category: String
    public var cmb: String
    public var device: String
    public var supportedPlatforms: String
    public var proceedsReason: String
    public var preservedPricing: String
    public var client: String
    public var orderType: String

    /// Whether the product type identifier is one of an in-app purchase or a subscription
    /// (`SalesReportProductType.inApp`: IA1, IA1-M, IA9, IA9-M, IAY, IAY-M, IAC, FI1).
    public var isInAppPurchase: Bool {
        SalesReportProductType.inApp.contains(productTypeIdentifier)
    }

    /// `customerPrice` as a number (exact: decimal, not binary floating point).
    public var customerPriceValue: Decimal {
        Decimal(string: customerPrice, locale: Self.posix) ?? 0
    }

    /// `developerProceeds` as a number.
    public var developerProceedsValue: Decimal {
        Decimal(string: developerProceeds, locale: Self.posix) ?? 0
    }

    /// A point for the decimal separator, whatever the process's locale.
    private static let posix = Locale(identifier: "en_US_POSIX")

    /// A line made by hand (tests, a report from elsewhere): the columns a reconciliation reads, the rest empty
    /// unless given.
    public init(
        sku: String, productTypeIdentifier: String, units: Int64, customerPrice: String, customerCurrency: String,
        countryCode: String, beginDate: String, endDate: String, developerProceeds: String = "0",
        currencyOfProceeds: String? = nil, appleIdentifier: String = "", title: String = "",
        parentIdentifier: String = ""
    ) {
        self.init({ _ in "" }, units: units)
        self.sku = sku
        self.productTypeIdentifier = productTypeIdentifier
        self.customerPrice = customerPrice
        self.customerCurrency = customerCurrency
        self.countryCode = countryCode
        self.beginDate = beginDate
        self.endDate = endDate
        self.developerProceeds = developerProceeds
        self.currencyOfProceeds = currencyOfProceeds ?? customerCurrency
        self.appleIdentifier = appleIdentifier
        self.title = title
        self.parentIdentifier = parentIdentifier
    }

    /// A line with every column given by `value` (the parser's).
    init(_ value: (SalesReportColumn) -> String, units: Int64) {
        provider = value(.provider)
        providerCountry = value(.providerCountry)
        sku = value(.sku)
        developer = value(.developer)
        title = value(.title)
        version = value(.version)
        productTypeIdentifier = value(.productTypeIdentifier)
        self.units = units
        developerProceeds = value(.developerProceeds)
        beginDate = value(.beginDate)
        endDate = value(.endDate)
        customerCurrency = value(.customerCurrency)
        countryCode = value(.countryCode)
        currencyOfProceeds = value(.currencyOfProceeds)
        appleIdentifier = value(.appleIdentifier)
        customerPrice = value(.customerPrice)
        promoCode = value(.promoCode)
        parentIdentifier = value(.parentIdentifier)
        subscription = value(.subscription)
        period = value(.period)
        category = value(.category)
        cmb = value(.cmb)
        device = value(.device)
        supportedPlatforms = value(.supportedPlatforms)
        proceedsReason = value(.proceedsReason)
        preservedPricing = value(.preservedPricing)
        client = value(.client)
        orderType = value(.orderType)
    }
}
