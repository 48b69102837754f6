/// Why bytes are not a Summary Sales Report that can be read: what the input is not, or which line is wrong and how.
/// The message is for people (the `reconcile` command prints it); `kind` is for code.
public struct SalesReportError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No bytes, or a gzip file holding none.
        case empty
        /// Something else altogether: HTML, JSON, XML, a ZIP archive, binary data, text that is not UTF-8.
        case notAReport
        /// A gzip file cut short, corrupt, or followed by other data.
        case badCompression
        /// Larger than the bounds (a file's bytes, decompressed bytes, lines, a line's bytes).
        case tooLarge
        /// A file that cannot be opened or read (`SalesReport.readFile`).
        case unreadable
        /// Text whose header lacks columns a Summary Sales Report has.
        case missingColumns
        /// A line that does not fit the header or holds a value of the wrong form.
        case badLine
    }

    public var kind: Kind
    public var message: String
    /// The 1-based line of the text the error is about (after decompression), when it is about one.
    public var line: Int?

    public init(_ kind: Kind, _ message: String, line: Int? = nil) {
        self.kind = kind
        self.message = message
        self.line = line
    }

    public var description: String { message }

    /// "not a Sales Summary report: `reason`".
    static func notAReport(_ kind: Kind, _ reason: String) -> SalesReportError {
        SalesReportError(kind, "not a Sales Summary report: \(reason)")
    }

    /// "line N: `reason`".
    static func badLine(_ line: Int, _ reason: String) -> SalesReportError {
        SalesReportError(.badLine, "line \(line): \(reason)", line: line)
    }

    /// A value as quoted in a message: at most 40 characters, control characters escaped.
    static func quoted(_ text: Substring) -> String {
        "'\(PrintableText.of(text, limit: 40))'"
    }
}
