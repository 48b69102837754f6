import AppStoreModel
import Foundation

/// One line of a Summary Sales Report: an aggregate of units of one product sold (or refunded) in one country, currency
/// and price during the report's period. Text as Apple wrote it (the customer price made canonical); numbers checked
/// when the report was read. Columns a file does not have are empty. The columns' text is kept packed in one
/// allocation (`PackedColumns`).
public struct SalesReportLine: Sendable, Equatable {
    private var columns: PackedColumns
    /// The line's 1-based line number in the report's text (after decompression; the header is line 1): what an error
    /// about the line found later (in `receipt_reconcile`, say) should name. 0 for a line made by hand.
    public var fileLine: Int
    public var provider: String {
        get { columns[.provider] }
        set { columns[.provider] = newValue }
    }
    public var providerCountry: String {
        get { columns[.providerCountry] }
        set { columns[.providerCountry] = newValue }
    }
    /// For an in-app purchase, its product ID as set in App Store Connect.
    public var sku: String {
        get { columns[.sku] }
        set { columns[.sku] = newValue }
    }
    public var developer: String {
        get { columns[.developer] }
        set { columns[.developer] = newValue }
    }
    public var title: String {
        get { columns[.title] }
        set { columns[.title] = newValue }
    }
    public var version: String {
        get { columns[.version] }
        set { columns[.version] = newValue }
    }
    /// `SalesReportProductType`: IA1, IAY, ... for in-app purchases; 1F, 7, ... for apps and updates.
    public var productTypeIdentifier: String {
        get { columns[.productTypeIdentifier] }
        set { columns[.productTypeIdentifier] = newValue }
    }
    /// Negative on refund lines.
    public var units: Int64
    /// Proceeds per unit, decimal text as Apple gives it (".70", "0.7", "1.41"), in `currencyOfProceeds`.
    public var developerProceeds: String {
        get { columns[.developerProceeds] }
        set { columns[.developerProceeds] = newValue }
    }
    /// MM/DD/YYYY, as in the file.
    public var beginDate: String {
        get { columns[.beginDate] }
        set { columns[.beginDate] = newValue }
    }
    public var endDate: String {
        get { columns[.endDate] }
        set { columns[.endDate] = newValue }
    }
    /// Three-letter ISO 4217 code.
    public var customerCurrency: String {
        get { columns[.customerCurrency] }
        set { columns[.customerCurrency] = newValue }
    }
    /// Two-letter ISO 3166 code of the storefront.
    public var countryCode: String {
        get { columns[.countryCode] }
        set { columns[.countryCode] = newValue }
    }
    public var currencyOfProceeds: String {
        get { columns[.currencyOfProceeds] }
        set { columns[.currencyOfProceeds] = newValue }
    }
    public var appleIdentifier: String {
        get { columns[.appleIdentifier] }
        set { columns[.appleIdentifier] = newValue }
    }
    /// Price per unit charged to the customer, tax included; negative on refund lines. Canonical decimal text, whatever
    /// form Apple wrote it in: "0.99" for ".99", "-0.5" for "-.5", "12" for "012", "0.00" for "-0.00" (an optional minus
    /// sign, at least one and at most 15 digits without leading zeros, then optionally a point and 1-6 digits; no plus
    /// sign, no exponent). What `receipt_reconcile`'s `price` accepts: send this. Set by hand, it is as given.
    public var customerPrice: String {
        get { columns[.customerPrice] }
        set { columns[.customerPrice] = newValue }
    }
    public var promoCode: String {
        get { columns[.promoCode] }
        set { columns[.promoCode] = newValue }
    }
    /// For an in-app purchase, the SKU of its app.
    public var parentIdentifier: String {
        get { columns[.parentIdentifier] }
        set { columns[.parentIdentifier] = newValue }
    }
    public var subscription: String {
        get { columns[.subscription] }
        set { columns[.subscription] = newValue }
    }
    public var period: String {
        get { columns[.period] }
        set { columns[.period] = newValue }
    }
    public var category: String {
        get { columns[.category] }
        set { columns[.category] = newValue }
    }
    public var cmb: String {
        get { columns[.cmb] }
        set { columns[.cmb] = newValue }
    }
    public var device: String {
        get { columns[.device] }
        set { columns[.device] = newValue }
    }
    public var supportedPlatforms: String {
        get { columns[.supportedPlatforms] }
        set { columns[.supportedPlatforms] = newValue }
    }
    public var proceedsReason: String {
        get { columns[.proceedsReason] }
        set { columns[.proceedsReason] = newValue }
    }
    public var preservedPricing: String {
        get { columns[.preservedPricing] }
        set { columns[.preservedPricing] = newValue }
    }
    public var client: String {
        get { columns[.client] }
        set { columns[.client] = newValue }
    }
    public var orderType: String {
        get { columns[.orderType] }
        set { columns[.orderType] = newValue }
    }

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
    /// unless given. A `customerPrice` in a form the parser accepts is made canonical as the parser makes it.
    public init(
        sku: String, productTypeIdentifier: String, units: Int64, customerPrice: String, customerCurrency: String,
        countryCode: String, beginDate: String, endDate: String, developerProceeds: String = "0",
        currencyOfProceeds: String? = nil, appleIdentifier: String = "", title: String = "",
        parentIdentifier: String = "", fileLine: Int = 0
    ) {
        self.init({ _ in [] }, units: units, fileLine: fileLine)
        self.sku = sku
        self.productTypeIdentifier = productTypeIdentifier
        self.customerPrice = SalesReportNumbers.canonicalDecimal(customerPrice[...]) ?? customerPrice
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

    /// A line with every column's UTF-8 given by `value` (the parser's).
    init(_ value: (SalesReportColumn) -> ArraySlice<UInt8>, units: Int64, fileLine: Int) {
        columns = PackedColumns(value)
        self.units = units
        self.fileLine = fileLine
    }
}
