import Testing
import Workers

/// `Reconciliation.checkUnits`: what `receipt_reconcile()` is given can be added up in a bigint however it groups it
/// (issue 36, attack 4).
@Suite("Reconciliation: units checked before SQL")
struct ReconciliationUnitsTests {
    typealias Apple = Reconciliation.AppleLine

    static func lines(_ units: [Int64]) -> [Apple] {
        units.enumerated().map { index, units in
            Apple(sku: "coins.100", country: "US", currency: "USD", price: "0.99", units: units, fileLine: index + 2)
        }
    }

    @Test("20,000 lines of 999,999,999,999,999: the 9,224th (line 9225) brings the sum past Int64, named with its column")
    func sumOverflows() {
        let huge = Self.lines(Array(repeating: 999_999_999_999_999, count: 20_000))
        do {
            try Reconciliation.checkUnits(huge)
            Issue.record("the units' sum past Int64 was accepted")
        } catch {
            #expect(error.fileLine == 9_225)
            #expect(error.description.hasPrefix("line 9225: Units 999999999999999 brings the report's units past "
                                                + "9223372036854775807"), "\(error)")
        }
        // Refunds count by their size: sales and refunds that cancel out cannot hide a sum SQL could not form.
        let mixed = Self.lines((0..<20_000).map { $0.isMultiple(of: 2) ? 999_999_999_999_999 : -999_999_999_999_999 })
        #expect(throws: Reconciliation.UnitsOutOfRange.self) { try Reconciliation.checkUnits(mixed) }
        // 9,223 of them fit.
        #expect(throws: Never.self) {
            try Reconciliation.checkUnits(Self.lines(Array(repeating: 999_999_999_999_999, count: 9_223)))
        }
    }

    @Test("one line past 15 digits either way (Int64.min included) is out of range, named by its line")
    func lineOutOfRange() {
        for units: Int64 in [1_000_000_000_000_000, -1_000_000_000_000_000, .max, .min] {
            do {
                try Reconciliation.checkUnits(Self.lines([1, units]))
                Issue.record("\(units) accepted")
            } catch {
                #expect(error.fileLine == 3)
                #expect(error.description == "line 3: Units \(units) is out of range: at most 999999999999999 either way")
            }
        }
        // A line made by hand, without a file line, is named by its place among the lines.
        do {
            try Reconciliation.checkUnits([Apple(sku: "x", country: "US", currency: "USD", price: "1", units: .min)])
            Issue.record("Int64.min accepted")
        } catch {
            #expect(error.description.hasPrefix("report line 1: Units"))
        }
        #expect(throws: Never.self) {
            try Reconciliation.checkUnits(Self.lines([999_999_999_999_999, -999_999_999_999_999]))
        }
    }
}
