import Foundation
import PostgresClient

/// A comparison of one day of Apple's Sales Summary report with the Production ledger (`receipt_reconcile()`,
/// docs/reconciliation.md): the run stored with its differences, for `receipt-worker reconcile` and for `work` by
/// itself (`Reconciler`). No HTTP here: the report's in-app purchase lines come in as `AppleLine`s.
public enum Reconciliation {
    /// Where the report came from (`receipt_reconciliations.source`).
    public enum Source: String, Sendable, Hashable {
        case file
        case api
    }

    /// One in-app purchase line of Apple's report, as `receipt_reconcile()` reads it (its JSON field names).
    public struct AppleLine: Sendable, Hashable, Codable {
        public var sku: String
        /// ISO 3166-1 alpha-2, as Apple's report gives it.
        public var country: String
        /// The customer's currency (ISO 4217).
        public var currency: String
        /// The customer price per unit, as Apple's decimal text.
        public var price: String
        /// Negative on refunds.
        public var units: Int64
        /// The line's number in Apple's file (1 is the header), when it came from one: `receipt_reconcile()` names
        /// it in its error about a line it refuses.
        public var fileLine: Int?

        enum CodingKeys: String, CodingKey {
            case sku, country, currency, price, units
            case fileLine = "line"
        }

        public init(sku: String, country: String, currency: String, price: String, units: Int64, fileLine: Int? = nil) {
            self.sku = sku
            self.country = country
            self.currency = currency
            self.price = price
            self.units = units
            self.fileLine = fileLine
        }
    }

    /// One difference (`receipt_reconciliation_lines`).
    public struct Line: Sendable, Hashable {
        /// missing_in_ledger, missing_in_report, unit_mismatch or price_mismatch.
        public var kind: String
        public var productId: String?
        public var sku: String?
        public var country: String?
        public var currency: String?
        public var customerPrice: String?
        /// price_mismatch: the price list's price, else the ledger's.
        public var expectedPrice: String?
        public var appleUnits: Int64
        public var ledgerUnits: Int64
    }

    /// A stored run and its differences.
    public struct Run: Sendable, Hashable {
        public var id: Int64
        public var reportDate: String
        public var source: Source
        /// Apple's in-app purchase lines of the day.
        public var appleRows: Int64
        /// Production credits and revocations in the day's window.
        public var ledgerRows: Int64
        public var lines: [Line]

        public var differences: Int { lines.count }
    }

    /// The most units one line may carry, sold or refunded: 15 digits, as `receipt_reconcile()` accepts.
    public static let maximumUnits: Int64 = 999_999_999_999_999

    /// Lines whose units `receipt_reconcile()` could not take or add up: bad input, named by the line of Apple's file
    /// and its column (Units). Nothing is stored.
    public struct UnitsOutOfRange: Error, Sendable, CustomStringConvertible {
        /// The line's number in Apple's file, when it came from one.
        public var fileLine: Int?
        public var description: String
    }

    /// Checks the units of `lines` before they reach SQL: each line's within `maximumUnits` either way, and the sum
    /// of every line's units by their size within Int64. `receipt_reconcile()` adds units up per product, country,
    /// currency and price, or per product, and stores each sum in a bigint; none of those sums can be larger than
    /// that one, so none overflows (a report of 20,000 lines of 999,999,999,999,999 units would: SQLSTATE 22003).
    public static func checkUnits(_ lines: [AppleLine]) throws(UnitsOutOfRange) {
        var total: Int64 = 0
        for (index, line) in lines.enumerated() {
            let place = line.fileLine.map { "line \($0)" } ?? "report line \(index + 1)"
            guard let size = Int64(exactly: line.units.magnitude), size <= maximumUnits else {
                throw UnitsOutOfRange(
                    fileLine: line.fileLine,
                    description: "\(place): Units \(line.units) is out of range: at most \(maximumUnits) either way"
                )
            }
            let (sum, overflow) = total.addingReportingOverflow(size)
            guard !overflow else {
                throw UnitsOutOfRange(
                    fileLine: line.fileLine,
                    description: "\(place): Units \(line.units) brings the report's units past \(Int64.max) (every "
                        + "line's units added up, refunds by their size); no day's report sells that many"
                )
            }
            total = sum
        }
    }

    /// Compares `lines` (Apple's in-app purchase lines of `reportDate`, YYYY-MM-DD) with the ledger, stores the run
    /// and returns it with its differences. The caller's transaction, if any, holds the run. Units out of range
    /// (`checkUnits`) throw `UnitsOutOfRange` before the database is asked anything.
    public static func run(
        reportDate: String, source: Source, lines: [AppleLine], _ connection: PostgresConnection
    ) throws -> Run {
        try checkUnits(lines)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let document = String(decoding: try encoder.encode(lines), as: UTF8.self)
        let result = try connection.query(
            "SELECT run_id, apple_rows, ledger_rows, differences FROM receipt_reconcile($1::date, $2, $3::jsonb)",
            [reportDate, source.rawValue, document]
        )
        guard let id = result.int64(0, "run_id"), let appleRows = result.int64(0, "apple_rows"),
            let ledgerRows = result.int64(0, "ledger_rows")
        else {
            throw PostgresError(kind: .protocolError, message: "receipt_reconcile() returned no run")
        }
        return Run(
            id: id, reportDate: reportDate, source: source, appleRows: appleRows, ledgerRows: ledgerRows,
            lines: try differences(ofRun: id, connection)
        )
    }

    /// The differences of run `id`, in the order they were stored.
    public static func differences(ofRun id: Int64, _ connection: PostgresConnection) throws -> [Line] {
        let result = try connection.query(
            "SELECT kind, product_id, sku, country, currency, customer_price::text AS customer_price, "
                + "expected_price::text AS expected_price, apple_units, ledger_units "
                + "FROM receipt_reconciliation_lines WHERE run_id = $1 ORDER BY id",
            [String(id)]
        )
        return try result.rows.indices.map { row in
            guard let kind = result[row, "kind"], let appleUnits = result.int64(row, "apple_units"),
                let ledgerUnits = result.int64(row, "ledger_units")
            else {
                throw PostgresError(kind: .protocolError, message: "a reconciliation line without kind or units")
            }
            return Line(
                kind: kind, productId: result[row, "product_id"], sku: result[row, "sku"],
                country: result[row, "country"], currency: result[row, "currency"],
                customerPrice: result[row, "customer_price"], expectedPrice: result[row, "expected_price"],
                appleUnits: appleUnits, ledgerUnits: ledgerUnits
            )
        }
    }
}
