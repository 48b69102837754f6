import ArgumentParser
import ConsoleOutput
import Foundation
import JSONText
import PostgresClient
import SalesReports
import Workers

/// `receipt-worker reconcile --date D`: Apple's Sales Summary report of day D (a file, or the App Store Connect API)
/// compared with the Production ledger; the run and its differences stored and printed (docs/reconciliation.md).
struct ReconcileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Compare the ledger with Apple's daily Sales Summary report of a day.",
        discussion: """
            Reads Apple's Sales Summary report of --date (a day of Pacific Time, the zone of Apple's report days): \
            the file given with --report (gzip-compressed as Apple serves it, or not), else downloaded with the App \
            Store Connect API (APPSTORE_CONNECT_KEY_ID, APPSTORE_CONNECT_ISSUER_ID, \
            APPSTORE_CONNECT_PRIVATE_KEY_FILE, APPSTORE_VENDOR_NUMBER; an App Store Connect API key with the Sales \
            or Finance role, not the In-App Purchase key). Compares its in-app purchase lines with the Production \
            ledger's credits and refunds of that day (receipt_reconcile()), stores the run in \
            receipt_reconciliations and receipt_reconciliation_lines, and prints the differences: \
            missing_in_ledger, missing_in_report, unit_mismatch, price_mismatch. Needs DATABASE_URL.

            Exit status: 0 no difference; 1 differences found (or a database failure); 2 bad input (a date that is \
            not a day, a file that is not such a report, a line whose Units are out of range or add up past a \
            64-bit integer, a setting missing); 3 Apple's report is not ready yet \
            (nothing stored: run it again later), or the database has no receipt-worker schema.
            """
    )

    @Option(help: "The report's day, YYYY-MM-DD (Apple's day: Pacific Time).")
    var date: String

    @Option(help: "Apple's report file (.txt.gz as downloaded, or uncompressed), instead of the App Store Connect API.")
    var report: String?

    @Flag(help: "Print the run as JSON instead of a table.")
    var json = false

    /// The exit status when Apple's report is not ready yet.
    static let notReadyStatus: Int32 = 3

    func run() throws {
        let settings = Settings()
        guard let reportDate = ReconcileReport.reportDate(date) else {
            throw ConfigurationError(.invalid, "--date must be a day, YYYY-MM-DD (e.g. 2026-11-24), got \"\(date)\"")
        }
        // The input and the settings first: a file that is not the report, or a key missing, is exit 2 before the
        // database is asked anything.
        let input: Input
        if let report {
            input = .file(try Self.read(report, reportDate: reportDate))
        } else {
            input = .api(try Self.client(settings))
        }
        let connection = try connect(try settings.databaseURL(as: .worker))
        defer { connection.close() }
        try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        let appleLines: [Reconciliation.AppleLine]
        switch input {
        case .file(let lines):
            appleLines = lines
        case .api(let client):
            switch try Self.download(reportDate, client: client) {
            case .lines(let downloaded):
                appleLines = downloaded
            case .notReady(let message):
                flushStandardOutput()
                FileHandle.standardError.write(Data((
                    "Apple's Sales Summary report of \(reportDate) is not ready yet (Apple: \(message)). Daily reports "
                        + "are usually ready by 8 a.m. Pacific Time the next day; run this again later. Nothing was "
                        + "stored.\n"
                ).utf8))
                throw ExitCode(Self.notReadyStatus)
            }
        }
        let run: Reconciliation.Run
        do {
            run = try Reconciliation.run(reportDate: reportDate, source: input.source, lines: appleLines, connection)
        } catch let error as PostgresError where ["22023", "54000"].contains(error.sqlState) {
            // A line receipt_reconcile() refuses (its text escaped: it quotes the report), or too many: a file's is
            // bad input (exit 2), Apple's answer a failure (exit 1).
            let message = TerminalText.escaped(error.message)
            if case .file = input { throw ConfigurationError(.invalid, "\(report ?? ""): \(message)") }
            throw CommandFailure("Apple's Sales report of \(reportDate): \(message)")
        }
        print(json ? try Self.json(run) : Self.text(run))
        if run.differences > 0 { throw ExitCode(1) }
    }

    /// Where the report comes from.
    enum Input {
        /// The in-app purchase lines of a file already read.
        case file([Reconciliation.AppleLine])
        /// Downloaded with the App Store Connect API.
        case api(SalesReportClient)

        var source: Reconciliation.Source {
            switch self {
            case .file: .file
            case .api: .api
            }
        }
    }

    /// The in-app purchase lines of the report file at `path`; a file that cannot be read, or is not the daily
    /// report of `reportDate`, is a `ConfigurationError` (exit 2) saying what it is not. The file is read to
    /// `SalesReport.maximumBytes` at most (a pipe too, and /dev/zero is refused rather than read forever).
    static func read(_ path: String, reportDate: String) throws -> [Reconciliation.AppleLine] {
        let bytes: [UInt8]
        do {
            bytes = try SalesReport.readFile(path: path)
        } catch {
            throw ConfigurationError(
                error.kind == .unreadable ? .unreadableFile : .invalid, "--report: \(error.message)"
            )
        }
        do {
            let report = try SalesReport.parse(bytes)
            return try ReconcileReport.lines(of: report, reportDate: reportDate, from: path)
        } catch let error as SalesReportError {
            throw ConfigurationError(.invalid, "\(path): \(error.message)")
        } catch {
            throw ConfigurationError(.invalid, "\(error)")
        }
    }

    /// The report of `reportDate` through the App Store Connect API.
    /// The App Store Connect API client; settings that cannot work are exit 2, each named.
    static func client(_ settings: Settings) throws -> SalesReportClient {
        let credentials = try settings.appStoreConnectCredentials(for: "reconcile without --report")
        do {
            return try SalesReportClient(credentials: credentials)
        } catch {
            throw ConfigurationError(.invalid, error.message)
        }
    }

    /// The report of `reportDate` downloaded; Apple's refusals and failures exit 1, in Apple's words.
    static func download(_ reportDate: String, client: SalesReportClient) throws -> ReportFetch {
        do {
            return try ReconcileReport.download(reportDate, client: client)
        } catch let error as SalesReportFetchError where error.kind == .configuration {
            throw ConfigurationError(.invalid, error.message)
        } catch let error as SalesReportFetchError {
            throw CommandFailure("Apple's Sales report of \(reportDate) was not downloaded: \(error.message)")
        } catch let error as ReconcileReport.ReportMismatch {
            throw CommandFailure(error.description)
        }
    }

    /// The run as a table. Every text a report brought (SKU, product id, country, currency, prices) is made printable
    /// by `TextTable`: a file's escape sequences are shown, not sent to the operator's terminal.
    static func text(_ run: Reconciliation.Run) -> String {
        let summary = "reconciliation \(run.id) of \(run.reportDate) (\(run.source.rawValue)): \(run.appleRows) Apple "
            + "in-app lines, \(run.ledgerRows) ledger rows, \(run.differences) differences"
        guard !run.lines.isEmpty else { return summary }
        let table = TextTable(
            ["kind", "product", "sku", "country", "currency", "price", "expected", "apple units", "ledger units"],
            run.lines.map { line in
                [
                    line.kind, line.productId ?? "", line.sku ?? "", line.country ?? "", line.currency ?? "",
                    line.customerPrice ?? "", line.expectedPrice ?? "", String(line.appleUnits), String(line.ledgerUnits),
                ]
            }
        )
        return summary + "\n" + table.render()
    }

    /// The run for machines: one JSON object, the report's control characters and line separators escaped.
    static func json(_ run: Reconciliation.Run) throws -> String {
        struct Line: Encodable {
            var kind: String
            var productId, sku, country, currency, customerPrice, expectedPrice: String?
            var appleUnits, ledgerUnits: Int64
        }
        struct Output: Encodable {
            var runId: Int64
            var reportDate, source: String
            var appleRows, ledgerRows: Int64
            var differences: Int
            var lines: [Line]
        }
        let output = Output(
            runId: run.id, reportDate: run.reportDate, source: run.source.rawValue, appleRows: run.appleRows,
            ledgerRows: run.ledgerRows, differences: run.differences,
            lines: run.lines.map {
                Line(
                    kind: $0.kind, productId: $0.productId, sku: $0.sku, country: $0.country, currency: $0.currency,
                    customerPrice: $0.customerPrice, expectedPrice: $0.expectedPrice, appleUnits: $0.appleUnits,
                    ledgerUnits: $0.ledgerUnits
                )
            }
        )
        return try JSONOutput.line(output, snakeCaseKeys: true)
    }
}
