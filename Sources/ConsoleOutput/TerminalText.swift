/// Text from outside (a database row, an Apple report or answer, a logged value) made safe for a terminal, the one
/// escaper of every table, text log line and message that quotes such text.
public enum TerminalText {
    /// `text` with what a terminal would act on, or a reader be misled by, escaped: backslashes as `\\`, newline,
    /// return and tab as `\n`, `\r` and `\t`, and as `\u{…}` (lowercase hex, `\u{1b}` for ESC):
    /// - the control characters: C0, DEL (U+007F) and C1 (U+0080–U+009F; U+009B is ESC [ to a terminal);
    /// - the line and paragraph separators U+2028 and U+2029 (line breaks to many viewers);
    /// - the bidirectional controls (U+061C, U+200E, U+200F, the embeddings and overrides U+202A–U+202E, the isolates
    ///   U+2066–U+2069), which reorder what is shown ("Trojan Source").
    ///
    /// Everything else (é, £, €, emoji, CJK, Arabic and Hebrew letters) is copied as it is. Backslashes are escaped so
    /// that the text `\u{1b}` cannot pass for an escaped ESC.
    public static func escaped(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case "\\": escaped += "\\\\"
            case _ where isUnprintable(scalar): escaped += "\\u{\(String(scalar.value, radix: 16))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A message of the program's own that may quote text from outside (an error naming a value read from a file,
    /// Apple's answer): the unprintable characters escaped as in `escaped(_:)`, but its own line breaks and tabs, and
    /// backslashes, kept (the message is not outside text, only what it quotes may be, and text it quotes escaped
    /// already keeps its one backslash).
    public static func message(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: { $0 != "\n" && $0 != "\t" && isUnprintable($0) }) else {
            return String(text)
        }
        var escaped = ""
        for scalar in text.unicodeScalars {
            if scalar != "\n" && scalar != "\t" && isUnprintable(scalar) {
                escaped += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Whether `escaped(_:)` writes `scalar` as a `\u{…}` escape.
    public static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return properties.isBidiControl
        }
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\\" || isUnprintable(scalar)
    }
}
