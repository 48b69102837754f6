import Foundation
import JSONText

/// How the notification runs print their figures: a two-column table, then (with `--json`) one line of JSON.
enum BenchTable {
    /// The rows' labels padded to one width, each value after two spaces.
    static func render(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }

    /// `value` as one line of JSON, keys sorted (`JSONOutput`: control characters and line separators escaped).
    static func json(_ value: some Encodable) -> String {
        (try? JSONOutput.line(value)) ?? "{}"
    }
}
