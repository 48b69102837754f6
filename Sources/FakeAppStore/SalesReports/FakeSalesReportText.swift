import AppStoreModel

/// Writes a Summary Sales Report's text as Apple does: Apple's header (`SalesReportColumn`, in Apple's order), one
/// tab-separated line per `FakeSalesLine`, LF line ends, the day as MM/DD/YYYY in Begin Date and End Date.
enum FakeSalesReportText {
    static func text(_ lines: [FakeSalesLine], day: String) -> [UInt8] {
        let parts = day.split(separator: "-")
        let date = parts.count == 3 ? "\(parts[1])/\(parts[2])/\(parts[0])" : day
        var text = SalesReportColumn.allCases.map(\.rawValue).joined(separator: "\t") + "\n"
        for line in lines {
            text += SalesReportColumn.allCases.map { clean(value($0, of: line, date: date)) }.joined(separator: "\t")
            text += "\n"
        }
        return Array(text.utf8)
    }

    private static func value(_ column: SalesReportColumn, of line: FakeSalesLine, date: String) -> String {
        switch column {
        case .provider: "APPLE"
        case .providerCountry: "US"
        case .sku: line.sku
        case .developer: "Fake Developer"
        case .title: line.title
        case .productTypeIdentifier: line.productType
        case .units: String(line.units)
        case .developerProceeds: line.developerProceeds
        case .beginDate, .endDate: date
        case .customerCurrency, .currencyOfProceeds: line.currency
        case .countryCode: line.countryCode
        case .appleIdentifier: appleIdentifier(line.sku)
        case .customerPrice: line.customerPrice
        case .parentIdentifier: line.parentIdentifier
        case .device: "iPhone"
        case .supportedPlatforms: "iOS"
        case .version, .promoCode, .subscription, .period, .category, .cmb, .proceedsReason, .preservedPricing, .client,
            .orderType:
            ""
        }
    }

    /// A product's Apple ID: ten digits that follow from its SKU.
    private static func appleIdentifier(_ sku: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in sku.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return String(1_000_000_000 + hash % 9_000_000_000)
    }

    /// Tabs and line breaks (from a product id) would break the file.
    private static func clean(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0.isNewline ? " " : $0 })
    }
}
