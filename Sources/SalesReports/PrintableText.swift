/// Text from outside made safe to print: control characters (terminal escapes, newlines, DEL, C1) and the line and
/// paragraph separators U+2028 and U+2029 escaped, at most `limit` characters, "…" when cut.
enum PrintableText {
    static func of<Text: StringProtocol>(_ text: Text, limit: Int) -> String {
        let shown = text.prefix(limit).unicodeScalars.map { scalar in
            [.control, .lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory)
                ? scalar.escaped(asASCII: true) : String(scalar)
        }.joined()
        return shown + (text.count > limit ? "…" : "")
    }
}
