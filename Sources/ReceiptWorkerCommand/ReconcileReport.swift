import ConsoleOutput
import Foundation
import SalesReports
import Workers

/// Apple's Summary Sales Report turned into what `receipt_reconcile()` compares: the in-app purchase and subscription
/// lines of one day, checked to be that day's (a daily report whose lines begin and end on it).
enum ReconcileReport {
    /// `text` as a calendar day YYYY-MM-DD, or nil.
    static func reportDate(_ text: String) -> String? {
        guard text.utf8.count == 10, text.wholeMatch(of: /[0-9]{4}-[0-9]{2}-[0-9]{2}/) != nil else { return nil }
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3 else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = DateComponents(calendar: calendar, year: parts[0], month: parts[1], day: parts[2])
        guard parts[0] >= 2000, components.isValidDate else { return nil }
        return text
    }

    /// The day as Apple's report writes it, MM/DD/YYYY.
    static func appleDate(_ reportDate: String) -> String {
        let parts = reportDate.split(separator: "-")
        return "\(parts[1])/\(parts[2])/\(parts[0])"
    }

    /// The in-app purchase lines of `report`, which must be the daily report of `reportDate` (`from`: where it came
    /// from, for the message), with units `receipt_reconcile()` can add up (`Reconciliation.checkUnits`). Throws a
    /// message saying what the report is instead, or which line's units are out of range.
    static func lines(
        of report: SalesReport, reportDate: String, from origin: String
    ) throws(ReportMismatch) -> [Reconciliation.AppleLine] {
        let day = appleDate(reportDate)
        if let other = report.lines.first(where: { $0.beginDate != day || $0.endDate != day }) {
            // Apple's text, made printable (a file's control characters never reach the terminal).
            let begin = TerminalText.escaped(other.beginDate.prefix(40))
            let end = TerminalText.escaped(other.endDate.prefix(40))
            let period = other.beginDate == other.endDate
                ? "the daily report of \(begin)" : "a report of \(begin) to \(end)"
            throw ReportMismatch(
                "\(origin) is \(period), not the daily report of \(reportDate) (\(day)): give --date that day, or "
                    + "the report of \(reportDate)"
            )
        }
        let lines = report.inAppLines.map { line in
            Reconciliation.AppleLine(
                sku: line.sku, country: line.countryCode, currency: line.customerCurrency, price: line.customerPrice,
                units: line.units, fileLine: line.fileLine
            )
        }
        // Units the comparison could not add up are bad input, named here, before the database is asked anything.
        do {
            try Reconciliation.checkUnits(lines)
        } catch {
            throw ReportMismatch("\(origin): \(error.description)")
        }
        return lines
    }

    /// A report that is not the one asked for.
    struct ReportMismatch: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

extension ReconcileReport {
    /// The day's in-app purchase lines through the App Store Connect API (`reconcile` without --report, and `work`
    /// at RECONCILE_AT): Apple's 404 is `.notReady`; an answer that is not the day's Sales Summary report throws.
    static func download(_ reportDate: String, client: SalesReportClient) throws -> ReportFetch {
        switch try client.fetchDailySummary(reportDate: reportDate) {
        case .notReady(let message):
            return .notReady(message)
        case .report(let bytes):
            let report: SalesReport
            do {
                report = try SalesReport.parse(bytes)
            } catch {
                throw ReportMismatch("Apple's answer for \(reportDate) is not a Sales Summary report: \(error.message)")
            }
            return .lines(try lines(of: report, reportDate: reportDate, from: "Apple's answer"))
        }
    }
}
