import Testing

@testable import SalesReports

/// Units are range-checked where they are read (issue 36, attack 4): at most 15 digits either way, what
/// `receipt_reconcile` accepts; a number past Int64 is out of range, not "not a whole number".
@Suite("Sales report units in range")
struct SalesReportUnitsTests {
    typealias Parser = SalesReportParserTests

    @Test("Units up to 999,999,999,999,999 either way are read; one more, or past Int64, is refused naming line and column")
    func unitsRange() throws {
        for units in ["999999999999999", "-999999999999999", "+999999999999999", "999999999999999.00"] {
            let report = try SalesReport.parse(Parser.bytes(Parser.text([Parser.row(units: units)])))
            #expect(report.lines.first?.units.magnitude == 999_999_999_999_999, "\(units)")
        }
        for units in ["1000000000000000", "-1000000000000000", "9223372036854775807", "-9223372036854775808",
                      "99999999999999999999999"] {
            let error = Parser.error(Parser.bytes(Parser.text([Parser.row(), Parser.row(units: units)])))
            #expect(error?.kind == .badLine, "\(units): \(String(describing: error))")
            #expect(error?.line == 3, "\(units)")
            #expect(error?.message == "line 3: Units '\(units)' is out of range: at most 999999999999999 either way",
                    "\(units): \(String(describing: error))")
        }
        // A value of the wrong form is still that.
        let error = Parser.error(Parser.bytes(Parser.text([Parser.row(units: "1e20")])))
        #expect(error?.message == "line 2: Units '1e20' is not a whole number")
    }
}
