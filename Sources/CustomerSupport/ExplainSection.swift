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

/// The whole story of one subject: every section, in `ExplainQueries.Section.allCases` order.
public struct ExplainStory: Sendable, Hashable {
    public var subject: ExplainSubject
    public var sections: [ExplainSection]

    public init(subject: ExplainSubject, sections: [ExplainSection]) {
        self.subject = subject
        self.sections = sections
    }

    /// Whether anything at all was found about the subject.
    public var isEmpty: Bool { sections.allSatisfy(\.rows.isEmpty) }

    public func section(_ kind: ExplainQueries.Section) -> ExplainSection? {
        sections.first { $0.kind == kind }
    }
}
