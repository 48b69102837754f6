import ConsoleOutput

extension ExplainStory {
    /// The story for a terminal: a line naming the subject and what was found, then each section that has rows as a
    /// table, oldest first, with a line when more exist. Every value from the database is escaped (`TextTable`).
    public func text() -> String {
        let found = sections.filter { !$0.rows.isEmpty }
        var lines = [
            "explain \(TerminalText.escaped(subject.description)): "
                + (found.isEmpty
                    ? "nothing found"
                    : found.map { "\($0.rows.count)\($0.more ? "+" : "") \($0.kind.rawValue)" }.joined(separator: ", "))
                + " (times UTC, oldest first)"
        ]
        for section in found {
            lines.append("")
            lines.append(section.kind.title)
            lines.append(TextTable(section.columns, section.rows.map { $0.map { $0 ?? "-" } }).render())
            if section.more {
                lines.append(
                    "  … more exist: the latest \(section.rows.count) are shown (ask about one order or transaction)"
                )
            }
        }
        let empty = sections.filter(\.rows.isEmpty).map(\.kind.rawValue)
        if !found.isEmpty && !empty.isEmpty {
            lines.append("")
            lines.append("None: \(empty.joined(separator: ", ")).")
        }
        return lines.joined(separator: "\n")
    }
}
