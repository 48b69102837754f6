import JSONText

extension ExplainStory {
    /// The story as one JSON object: `subject` (`kind` and `id`, with `bundle_id` for an order), `found`, and per
    /// section (`orders`, `credits`, …) `{"more": bool, "rows": [{column: text or null}]}`, oldest first. Values are
    /// PostgreSQL's text of each column (numbers and times as text, times UTC), null for NULL.
    public func json() throws -> String {
        try JSONOutput.line(Document(story: self))
    }

    private struct Document: Encodable {
        var story: ExplainStory

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(Subject(story.subject), forKey: Key("subject"))
            try container.encode(!story.isEmpty, forKey: Key("found"))
            for section in story.sections {
                try container.encode(Section(section), forKey: Key(section.kind.rawValue))
            }
        }
    }

    private struct Subject: Encodable {
        var kind: String
        var id: String
        var bundleId: String?

        init(_ subject: ExplainSubject) {
            switch subject {
            case .order(let id, let bundleId): (kind, self.id, self.bundleId) = ("order", id, bundleId)
            case .user(let id): (kind, self.id) = ("user", id)
            case .transaction(let id): (kind, self.id) = ("transaction", id)
            }
        }

        enum CodingKeys: String, CodingKey {
            case kind, id
            case bundleId = "bundle_id"
        }
    }

    private struct Section: Encodable {
        var more: Bool
        var rows: [Row]

        init(_ section: ExplainSection) {
            more = section.more
            rows = section.rows.map { Row(columns: section.columns, values: $0) }
        }
    }

    private struct Row: Encodable {
        var columns: [String]
        var values: [String?]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (column, value) in zip(columns, values) {
                try container.encode(value, forKey: Key(column))
            }
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
