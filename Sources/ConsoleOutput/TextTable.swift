/// A plain aligned table for terminals: a header, a rule, and one line per row, columns two spaces apart. Every cell is
/// printed through `TerminalText.escaped` (cells hold database and Apple text: no escape sequence, line break or
/// bidirectional override reaches the terminal), so callers pass text as it is.
public struct TextTable {
    public var header: [String]
    public var rows: [[String]]

    public init(_ header: [String], _ rows: [[String]]) {
        self.header = header
        self.rows = rows
    }

    /// The table's lines, each indented by two spaces, without trailing spaces.
    public func render() -> String {
        let header = header.map { TerminalText.escaped($0) }
        let rows = rows.map { $0.map { TerminalText.escaped($0) } }
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            "  " + cells.enumerated().map { index, cell in
                cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var lines = [line(header), line(widths.map { String(repeating: "-", count: $0) })]
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
