#if os(Linux)
import Foundation
import Testing

/// `receipt-worker reconcile --report`, run as the built binary, on a report whose SKU (and title) holds the characters
/// a JSON string may carry raw but a terminal or a log pipeline acts on: DEL, C1 controls (U+009B is ESC [ to a
/// terminal, U+0085 a line break to some), and the line and paragraph separators U+2028 and U+2029. Neither the JSON
/// nor the table prints them raw; the JSON still parses to the report's own text.
@Suite("Reconciliation: DEL, C1 controls and U+2028/U+2029 from a report", .serialized, .ownThread)
struct ReconcileControlCharacterTests {
    /// The characters that must never be printed raw.
    static func isRaw(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 && scalar != "\n" || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028
            || scalar.value == 0x2029
    }

    @Test("--json escapes them as \\uXXXX, parsing to the report's SKU; the table and a refusal's message escape them too")
    func escaped() async throws {
        let h = try Harness()
        let environment = ChildProcess.environment(
            removing: ReconcileCommandTests.connectNames, setting: ["DATABASE_URL": h.databaseURL]
        )
        let sku = "evil\u{9B}31m\u{7F}del\u{85}nel\u{2028}ls\u{2029}ps\u{80}\u{9F}"
        let text = ReconcileCommandTests.report(day: "2026-11-20", [(sku, "IA1", 1, "0.99", "USD", "US")])
        let path = try ReconcileCommandTests.file(Array(text.utf8))

        let json = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", path, "--json"], environment
        )
        #expect(json.status == 1, "\(json.output.debugDescription)")
        #expect(!json.output.unicodeScalars.contains(where: Self.isRaw), "\(json.output.debugDescription)")
        #expect(json.output.contains(#""sku":"evil\u009b31m\u007fdel\u0085nel\u2028ls\u2029ps\u0080\u009f""#),
                "\(json.output.debugDescription)")
        let run = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let lines = try #require(run["lines"] as? [[String: Any]])
        #expect(lines.count == 1 && lines.first?["sku"] as? String == sku, "\(json.output.debugDescription)")
        #expect(lines.first?["kind"] as? String == "missing_in_ledger", "\(json.output.debugDescription)")

        let table = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", path], environment
        )
        #expect(table.status == 1, "\(table.output.debugDescription)")
        #expect(!table.output.unicodeScalars.contains(where: Self.isRaw), "\(table.output.debugDescription)")
        #expect(table.output.contains(#"evil\u{9b}31m\u{7f}del\u{85}nel\u{2028}ls\u{2029}ps\u{80}\u{9f}"#),
                "\(table.output.debugDescription)")
        // Both runs stored the SKU as the report has it.
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliation_lines WHERE sku = $1", [sku]) == "2")

        // A report refused for a bad value: the message quotes it escaped too (exit 2, nothing more stored).
        let bad = ReconcileCommandTests.report(day: "2026-11-20", [("coins.100", "IA1", 1, "0.99", "USD", "US")])
            .replacingOccurrences(of: "\t1\t", with: "\t1\u{9B}2J\u{2028}\u{7F}\t")
        let refused = try await ReconcileCommandTests.run(
            ["reconcile", "--date", "2026-11-20", "--report", try ReconcileCommandTests.file(Array(bad.utf8))],
            environment
        )
        #expect(refused.status == 2, "\(refused.output.debugDescription)")
        #expect(!refused.output.unicodeScalars.contains(where: Self.isRaw), "\(refused.output.debugDescription)")
        #expect(refused.output.contains(#"Units '1\u{9b}2J\u{2028}\u{7f}' is not a whole number"#),
                "\(refused.output.debugDescription)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_reconciliations") == "2")
    }
}

#endif
