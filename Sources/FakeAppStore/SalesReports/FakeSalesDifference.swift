/// A difference planted between the fake's purchases and the sales report it serves, as a reconciliation must find
/// one (`FakeSalesReports.plant`, `POST /fake/sales-reports`). Days are YYYY-MM-DD in the report's time zone.
public enum FakeSalesDifference: Sendable, Hashable, Codable {
    /// Apple reports a sale the fake never signed (an order paid and never delivered: `missing_in_ledger`).
    case extraLine(day: String, line: FakeSalesLine)
    /// The report leaves out this purchase (and its refund) although the fake signed it (a forgery, or a report not
    /// final yet: `missing_in_report`).
    case omitTransaction(String)
    /// The lines of `sku` in `countryCode` on `day` report `units` instead (`unit_mismatch`; sales lines only).
    case units(day: String, sku: String, countryCode: String, units: Int64)
    /// The lines of `sku` in `countryCode` on `day` report `customerPrice` (decimal text) instead (a price changed in
    /// App Store Connect and not internally: `price_mismatch`; sales lines only).
    case price(day: String, sku: String, countryCode: String, customerPrice: String)
}

/// One line of a fake sales report, before its columns are written.
public struct FakeSalesLine: Sendable, Hashable, Codable {
    public var sku: String
    public var title: String
    /// `SalesReportProductType`: IA1, IAY, IA9, ...
    public var productType: String
    public var units: Int64
    /// Decimal text, per unit; negative on refund lines.
    public var customerPrice: String
    public var developerProceeds: String
    /// Three letters (ISO 4217).
    public var currency: String
    /// Two letters (ISO 3166-1).
    public var countryCode: String
    /// The app's SKU (the fake uses the bundle id).
    public var parentIdentifier: String

    public init(
        sku: String, title: String? = nil, productType: String = "IA1", units: Int64, customerPrice: String,
        developerProceeds: String? = nil, currency: String, countryCode: String, parentIdentifier: String = "FAKEAPP"
    ) {
        self.sku = sku
        self.title = title ?? sku
        self.productType = productType
        self.units = units
        self.customerPrice = customerPrice
        self.developerProceeds = developerProceeds ?? customerPrice.trimmingPrefix("-").description
        self.currency = currency
        self.countryCode = countryCode
        self.parentIdentifier = parentIdentifier
    }
}
