import Foundation

/// A table of a Markdown page: its header's cells and its rows, each row's cells as written. A row is the unit the
/// docs tests compare: a name documented is a name in a row of the right table, not a name found anywhere on the page.
struct MarkdownTable {
    /// The heading (`## …` or `### …`) the table stands under, without its hashes; "" before any.
    var heading: String
    /// The text between that heading (or the table before, if nearer) and the table.
    var preamble: String
    var header: [String]
    var rows: [Row]

    struct Row {
        /// 1-based line of the page.
        var line: Int
        var cells: [String]

        /// The cell under `column` (by the header's text), or "".
        func cell(_ column: Int) -> String { column < cells.count ? cells[column] : "" }
    }

    /// Every table of `page`: runs of lines starting with `|`, the second of which is the header's separator.
    static func tables(in page: String) -> [MarkdownTable] {
        var tables: [MarkdownTable] = []
        var heading = ""
        var preamble: [String] = []
        var inFence = false
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { inFence.toggle() }
            if line.hasPrefix("#") && !inFence {
                heading = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
                preamble = []
            }
            guard line.hasPrefix("|"), index + 1 < lines.count, isSeparator(lines[index + 1]) else {
                if !line.hasPrefix("#") || inFence { preamble.append(line) }
                index += 1
                continue
            }
            var table = MarkdownTable(
                heading: heading, preamble: preamble.joined(separator: "\n"), header: cells(line), rows: []
            )
            preamble = []
            index += 2
            while index < lines.count, lines[index].hasPrefix("|") {
                table.rows.append(Row(line: index + 1, cells: cells(lines[index])))
                index += 1
            }
            tables.append(table)
        }
        return tables
    }

    /// `| --- | :---: |`.
    static func isSeparator(_ line: String) -> Bool {
        line.hasPrefix("|") && line.allSatisfy { "|-: ".contains($0) } && line.contains("-")
    }

    /// A row's cells, split on `|` but not on `\|` or a `|` inside a code span.
    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var inCode = false
        var previous: Character = " "
        for character in line.trimmingCharacters(in: .whitespaces).dropFirst() {
            if character == "`" { inCode.toggle() }
            if character == "|" && !inCode && previous != "\\" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
            previous = character
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty {
            cells.append(current.trimmingCharacters(in: .whitespaces))
        }
        return cells
    }

    /// The tables of `page` whose header's first cell is `first`.
    static func tables(in page: String, firstColumn first: String) -> [MarkdownTable] {
        tables(in: page).filter { $0.header.first?.lowercased() == first }
    }

    /// The code spans of `text` (`` `x` ``), as written.
    static func codeSpans(_ text: String) -> [String] {
        SourceNames.captures(of: "`([^`]+)`", in: text)
    }
}
