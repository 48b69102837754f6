import Foundation

/// What the docs' tables document, a row at a time: a name counts as documented when a row of the right table names
/// it in its first column (a flag: anywhere in a row about its command), not when it appears somewhere on the page.
enum DocumentedNames {
    /// A row of one of docs/configuration.md's variable tables (header: `variable | …`).
    struct VariableRow {
        var names: [String]
        /// The flags of the `flag` column, when the table has one.
        var flags: [String]
        /// The commands the flag column names in parentheses (`` `--max-attempts` (`work`, `sweep`) ``); empty: any.
        var scope: [String]
        /// Whether the row is in a table with a `flag` column (the production settings), not the tools' table.
        var isProduction: Bool
        var line: Int
    }

    static func variableRows(_ page: String) -> [VariableRow] {
        MarkdownTable.tables(in: page, firstColumn: "variable").flatMap { table in
            let flagColumn = table.header.firstIndex { $0.lowercased() == "flag" }
            return table.rows.map { row in
                let flagCell = flagColumn.map { row.cell($0) } ?? ""
                let scope = SourceNames.captures(of: #"\(([^)]*)\)"#, in: flagCell)
                    .flatMap(MarkdownTable.codeSpans).filter { $0.wholeMatch(of: /[a-z][a-z-]*/) != nil }
                return VariableRow(
                    names: MarkdownTable.codeSpans(row.cell(0)).filter { $0.wholeMatch(of: /[A-Z][A-Z0-9_]*/) != nil },
                    flags: flags(in: flagCell), scope: scope, isProduction: flagColumn != nil, line: row.line
                )
            }
        }
    }

    /// The flags a text names: `--name`, or `--name-…` (a family: every flag starting with `name-`).
    static func flags(in text: String) -> [String] {
        SourceNames.captures(of: #"(?<![A-Za-z0-9-])--([a-z0-9][a-z0-9-]*(?:…)?)"#, in: text)
    }

    /// Whether `documented` (a name from `flags(in:)`) names `flag`.
    static func names(_ documented: String, _ flag: String) -> Bool {
        documented.hasSuffix("…") ? flag.hasPrefix(String(documented.dropLast())) : documented == flag
    }

    /// What the docs say of one command: its rows of operations.md's commands table (header: `command | …`) and
    /// every flag table (header: `flag | …`) whose preamble names it last (`` `receipt-worker bench` ``).
    struct CommandDocs {
        var command: String
        /// Lines of the rows and tables.
        var lines: [Int] = []
        /// Whether the commands table has a row for it.
        var inCommandsTable = false
        var flags: Set<String> = []
    }

    /// Per command; the top level's flags (`receipt-worker --version`) under "".
    static func commands(operations: String, otherPages: [String]) -> [String: CommandDocs] {
        var found: [String: CommandDocs] = [:]
        for table in MarkdownTable.tables(in: operations, firstColumn: "command") {
            for row in table.rows {
                guard let span = MarkdownTable.codeSpans(row.cell(0)).first(where: { $0.hasPrefix("receipt-worker ") })
                else { continue }
                let words = span.split(separator: " ").dropFirst().map(String.init)
                let word = words.first ?? ""
                // A second lowercase word names a subcommand (`receipt-worker notifications test`); arguments are
                // written in capitals (`ORDER_ID`), flags with dashes.
                let sub = words.dropFirst().first.flatMap { $0.wholeMatch(of: /[a-z][a-z-]*/) != nil ? $0 : nil }
                let command = word.hasPrefix("--") ? "" : sub.map { word + " " + $0 } ?? word
                var docs = found[command] ?? CommandDocs(command: command)
                docs.inCommandsTable = true
                docs.lines.append(row.line)
                docs.flags.formUnion(flags(in: row.cells.joined(separator: " | ")))
                found[command] = docs
            }
        }
        for page in [operations] + otherPages {
            for table in MarkdownTable.tables(in: page, firstColumn: "flag") {
                let named = SourceNames.captures(
                    of: #"`receipt-worker ([a-z][a-z-]*(?: [a-z][a-z-]*)?)[ `]"#, in: table.preamble
                )
                guard let command = named.last else { continue }
                var docs = found[command] ?? CommandDocs(command: command)
                docs.lines.append(contentsOf: table.rows.map(\.line))
                for row in table.rows { docs.flags.formUnion(flags(in: row.cell(0))) }
                found[command] = docs
            }
        }
        return found
    }

    /// The first column's names of the tables of `page` whose header is `header` (its first cells, lowercased):
    /// each cell's code spans, up to a `(` (`receipt_reconcile(report_date, …)` names `receipt_reconcile`).
    static func firstColumn(_ page: String, header: [String], heading: String? = nil) -> [String: Int] {
        var names: [String: Int] = [:]
        for table in MarkdownTable.tables(in: page)
        where Array(table.header.prefix(header.count)).map({ $0.lowercased() }) == header
            && (heading.map { table.heading.contains($0) } ?? true)
        {
            for row in table.rows {
                for span in MarkdownTable.codeSpans(row.cell(0)) {
                    let name = String(span.prefix { $0 != "(" })
                    if name.wholeMatch(of: /[a-z][a-z0-9_]*/) != nil { names[name] = row.line }
                }
            }
        }
        return names
    }
}

/// Names in one place and not the other.
struct Mismatch: Equatable, CustomStringConvertible {
    /// In the code, in no row of the docs.
    var undocumented: [String] = []
    /// In a row of the docs, not in the code (any more).
    var stale: [String] = []

    init(undocumented: [String] = [], stale: [String] = []) {
        self.undocumented = undocumented.sorted()
        self.stale = stale.sorted()
    }

    init(code: Set<String>, documented: Set<String>) {
        self.init(undocumented: Array(code.subtracting(documented)), stale: Array(documented.subtracting(code)))
    }

    var isEmpty: Bool { undocumented.isEmpty && stale.isEmpty }

    var description: String { "undocumented: \(undocumented); documented but not in the code: \(stale)" }
}
