/// What App Store Connect answered for one day's report.
public enum SalesReportFetch: Sendable, Equatable {
    /// The report file as Apple serves it (gzip-compressed): read it with `SalesReport.parse`.
    case report([UInt8])
    /// 404: Apple has no report for the day (yet), with Apple's words. A day's report appears the next morning in
    /// the time zone of its agreement; Apple answers the same 404 for a day on which nothing was sold.
    case notReady(String)
}
