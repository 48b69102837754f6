/// Text from outside made safe to print: control characters (terminal escapes, newlines) escaped, at most `limit`
/// characters, "…" when cut.
enum PrintableText {
    static func of<Text: StringProtocol>(_ text: Text, limit: Int) -> String {
        let shown = text.prefix(limit).unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
        }.joined()
        return shown + (text.count > limit ? "…" : "")
    }
}
