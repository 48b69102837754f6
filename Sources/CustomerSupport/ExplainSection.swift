/// One part of a purchase's story: rows of one table, oldest first, each with the same named fields (the query's
/// column list is the one field list: it names the text table's columns and the JSON objects' keys).
public struct ExplainSection: Sendable, Hashable {
    /// The section, as `ExplainQueries` names it: its JSON key.
    public var kind: ExplainQueries.Section
    public var columns: [String]
    /// Values as PostgreSQL writes them as text, nil for NULL. Untrusted: escape them before printing.
    public var rows: [[String?]]
    /// Whether rows beyond these exist (the section was cut at `ExplainReader.rowLimit`).
    public var more: Bool

    public init(kind: ExplainQueries.Section, columns: [String], rows: [[String?]], more: Bool) {
        self.kind = kind
        self.columns = columns
        self.rows = rows
        self.more = more
    }
}
