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
