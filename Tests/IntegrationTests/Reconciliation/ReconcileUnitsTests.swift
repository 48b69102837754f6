#if os(Linux)
import Foundation
import PostgresClient
import Testing
import Workers

/// Attack 4 (issue 36): a report whose Units add up past a bigint (20,000 lines of one SKU, each 999,999,999,999,999
/// units) is bad input, named by its line and column, and nothing is stored; never a database error (SQLSTATE 22003,
/// exit 1) half-way through the comparison.
@Suite("Reconciliation: units out of range are bad input", .serialized, .ownThread)
struct ReconcileUnitsTests {
    typealias Apple = Reconciliation.AppleLine

    /// 20,000 lines of `coins.100` in the US at 0.99, each of `units`: the 9,224th line (line 9,225 of the file)
    /// brings the units past Int64.max.
    static let lineCount = 20_000
    static let hugeUnits: Int64 = 999_999_999_999_999
    static let overflowingFileLine = 9_225

    @Test("reconcile --report of 20,000 lines of 999,999,999,999,999 units: exit 2 naming line 9225's Units, nothing stored")
    func commandRefusesTheSum() async throws {
        let h = try Harness()
        let environment = ChildProcess.environment(
            removing: ReconcileCommandTests.connectNames, setting: ["DATABASE_URL": h.databaseURL]
        )
        let line = ("coins.100", "IA1", Int(Self.hugeUnits), "0.99", "USD", "US")
        let lines = Array(repeating: line, count: Self.lineCount)
        let path = try ReconcileCommandTests.file(Array(ReconcileCommandTests.report(day: "2026-11-20", lines).utf8))
        let result = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", path], environment
        )
        #expect(result.status == 2, "\(result.output)")
        #expect(result.output.contains("line \(Self.overflowingFileLine): Units 999999999999999 brings the report's "
                                       + "units past 9223372036854775807"), "\(result.output)")
        #expect(!result.output.contains("22003") && !result.output.contains("out of range for type bigint"))
        // One line past 15 digits is refused by the parser, naming its line and column.
        let one = ReconcileCommandTests.report(day: "2026-11-20", [
            ("coins.100", "IA1", 1, "0.99", "USD", "US"),
            ("coins.100", "IA1", 1_000_000_000_000_000, "0.99", "USD", "US"),
        ])
        let onePath = try ReconcileCommandTests.file(Array(one.utf8))
        let single = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", onePath], environment
        )
        #expect(single.status == 2, "\(single.output)")
        #expect(single.output.contains("line 3: Units '1000000000000000' is out of range"), "\(single.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliation_lines") == "0")
    }

    @Test("Reconciliation.run refuses lines whose units add up past Int64, or one past 15 digits, before SQL is asked")
    func runChecksBeforeSQL() throws {
        let world = try ReconciliationTests.World()
        let huge = (0..<Self.lineCount).map { index in
            Apple(sku: "coins.100", country: "US", currency: "USD", price: "0.99", units: Self.hugeUnits,
                  fileLine: index + 2)
        }
        #expect(throws: Reconciliation.UnitsOutOfRange.self) { try world.run("2026-11-20", huge) }
        let negative = [Apple(sku: "coins.100", country: "US", currency: "USD", price: "0.99", units: Int64.min)]
        #expect(throws: Reconciliation.UnitsOutOfRange.self) { try world.run("2026-11-20", negative) }
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations") == 0)
    }

    @Test("receipt_reconcile() itself: units adding up past a bigint are 22023 naming the line, not 22003; nothing stored")
    func sqlChecksTheSum() throws {
        let world = try ReconciliationTests.World()
        let line = #"{"sku": "coins.100", "country": "US", "currency": "USD", "price": "0.99", "units": 999999999999999"#
        let lines = "[" + (0..<Self.lineCount).map { "\(line), \"line\": \($0 + 2)}" }.joined(separator: ", ") + "]"
        do {
            _ = try world.db.query("SELECT * FROM receipt_reconcile('2026-11-20', 'file', $1::jsonb)", [lines])
            Issue.record("receipt_reconcile() took units past a bigint")
        } catch let error as PostgresError {
            #expect(error.sqlState == "22023", "\(error)")
            let named = "report line 9224 (line \(Self.overflowingFileLine) of the file, column Units)"
            #expect(error.message.contains(named), "\(error.message)")
        }
        // Refunds count by their size: as many negative units overflow the same way.
        let refunds = "[" + (0..<Self.lineCount).map { _ in
            #"{"sku": "coins.100", "country": "US", "currency": "USD", "price": "-0.99", "units": -999999999999999}"#
        }.joined(separator: ", ") + "]"
        let refused = #expect(throws: PostgresError.self) {
            _ = try world.db.query("SELECT * FROM receipt_reconcile('2026-11-20', 'file', $1::jsonb)", [refunds])
        }
        #expect(refused?.sqlState == "22023", "\(String(describing: refused))")
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations") == 0)
        // Up to the bound the comparison runs: 9,223 such lines add up to 9,222,999,999,999,990,777.
        let fitting = "[" + (0..<9_223).map { _ in line + "}" }.joined(separator: ", ") + "]"
        #expect(try world.db.query("SELECT apple_rows FROM receipt_reconcile('2026-11-20', 'file', $1::jsonb)",
                                   [fitting]).rows == [["9223"]])
    }
}
#endif
