import ConsoleOutput

/// Text from outside made safe to print: escaped by `TerminalText.escaped` (control characters, line separators,
/// bidirectional overrides, backslashes), at most `limit` characters of it, "…" when cut.
enum PrintableText {
    static func of<Text: StringProtocol>(_ text: Text, limit: Int) -> String {
        TerminalText.escaped(text.prefix(limit)) + (text.count > limit ? "…" : "")
    }
}
