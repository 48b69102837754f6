/// Apple's daily (or weekly, monthly, yearly) Summary Sales Report, read: every line, and the lines of in-app purchases
/// and subscriptions.
public struct SalesReport: Sendable {
    public var lines: [SalesReportLine]

    public init(lines: [SalesReportLine]) {
        self.lines = lines
    }

    /// The lines whose product type is an in-app purchase or a subscription (`SalesReportLine.isInAppPurchase`).
    public var inAppLines: [SalesReportLine] {
        lines.filter(\.isInAppPurchase)
    }

    /// Text past this many bytes (after decompression) is refused. Apple's daily report of a large catalogue is a few
    /// MiB.
    public static let maximumBytes = 256 << 20
    /// Lines past this many are refused.
    public static let maximumLines = 4_000_000

    /// Reads a Summary Sales Report as Apple serves it (gzip-compressed) or decompressed: tab-separated UTF-8 text, a
    /// header line, one line per aggregate. Columns are found by their header names (`SalesReportColumn`), in any
    /// order; a byte-order mark, CRLF line ends and blank lines at the end are accepted. Anything else is an error
    /// saying what the input is not, or which line is wrong.
    public static func parse(_ bytes: [UInt8]) throws(SalesReportError) -> SalesReport {
        try parse(bytes, maximumBytes: maximumBytes, maximumLines: maximumLines)
    }

    /// `parse` with other bounds.
    public static func parse(
        _ bytes: [UInt8], maximumBytes: Int, maximumLines: Int
    ) throws(SalesReportError) -> SalesReport {
        try SalesReportParser(maximumBytes: maximumBytes, maximumLines: maximumLines).parse(bytes)
    }
}
