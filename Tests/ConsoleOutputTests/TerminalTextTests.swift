import ConsoleOutput
import Testing

/// `TerminalText.escaped`, the one escaper of tables, text logs and messages quoting outside text: what a terminal
/// would act on (C0, DEL, C1), what breaks a line (U+2028, U+2029) and what reorders a line (the bidirectional
/// controls) is shown as `\u{…}`; everything else is left as it is.
@Suite("TerminalText: control characters, separators and bidirectional controls escaped")
struct TerminalTextTests {
    static let c0: [UInt32] = Array(0x00...0x1F).filter { ![0x09, 0x0A, 0x0D].contains($0) }
    static let c1: [UInt32] = Array(0x80...0x9F)
    static let separators: [UInt32] = [0x2028, 0x2029]
    /// Unicode's Bidi_Control: the Arabic letter mark, LRM and RLM, the embeddings and overrides, the isolates.
    static let bidi: [UInt32] = [0x061C, 0x200E, 0x200F] + Array(0x202A...0x202E) + Array(0x2066...0x2069)

    static func scalar(_ value: UInt32) throws -> Unicode.Scalar {
        try #require(Unicode.Scalar(value))
    }

    @Test("C0 controls (but newline, return and tab) and DEL as \\u{…}, lowercase hex, between other text")
    func c0AndDelete() throws {
        for value in Self.c0 + [0x7F] {
            let text = "a" + String(try Self.scalar(value)) + "b"
            #expect(TerminalText.escaped(text) == "a\\u{\(String(value, radix: 16))}b", "U+\(value)")
        }
        #expect(TerminalText.escaped("\u{1B}[31mred\u{1B}[0m") == #"\u{1b}[31mred\u{1b}[0m"#)
        #expect(TerminalText.escaped("\u{1B}]0;owned\u{07}") == #"\u{1b}]0;owned\u{7}"#)
    }

    @Test("newline, return, tab and backslash as \\n, \\r, \\t and \\\\")
    func shortEscapes() {
        #expect(TerminalText.escaped("one\ntwo\r\nthree\tfour") == #"one\ntwo\r\nthree\tfour"#)
        // A backslash is doubled, so the text `\u{1b}` cannot pass for an escaped ESC.
        #expect(TerminalText.escaped(#"C:\dir \u{1b}"#) == #"C:\\dir \\u{1b}"#)
    }

    @Test("the C1 controls (U+009B is ESC [ to a terminal) as \\u{80}…\\u{9f}")
    func c1() throws {
        for value in Self.c1 {
            let text = "x" + String(try Self.scalar(value)) + "31m"
            #expect(TerminalText.escaped(text) == "x\\u{\(String(value, radix: 16))}31m", "U+\(value)")
        }
    }

    @Test("the line and paragraph separators U+2028 and U+2029")
    func separators() {
        #expect(TerminalText.escaped("line\u{2028}forged\u{2029}end") == #"line\u{2028}forged\u{2029}end"#)
    }

    @Test("the bidirectional embeddings, overrides, isolates and marks (Trojan Source)")
    func bidirectionalControls() throws {
        for value in Self.bidi {
            let text = "order " + String(try Self.scalar(value)) + "cba"
            #expect(TerminalText.escaped(text) == "order \\u{\(String(value, radix: 16))}cba", "U+\(value)")
        }
        #expect(TerminalText.escaped("\u{202E}lanigiro\u{202C} \u{2067}x\u{2069}")
            == #"\u{202e}lanigiro\u{202c} \u{2067}x\u{2069}"#)
    }

    @Test("ordinary text, non-ASCII included, is left as it is")
    func ordinaryText() {
        let ordinary = [
            "", "plain ascii: order-42 / coins.100 'quoted' \"double\" ~!@#$%^&*()",
            "café cafe\u{301} £1.99 €2,49 ¥300 ünïcödé", "\u{A0}non-breaking\u{A0}space and narrow\u{202F}space",
            "🧾 👩‍👩‍👧 🇫🇷 emoji", "注文 领收据 レシート 영수증", "عربي עברית", "\u{2027}\u{2030}\u{2065}\u{206A}\u{200B}\u{FEFF}",
            "\u{A3}\u{A0}\u{C2}\u{E2}\u{61B}\u{61D}\u{200D}\u{2010}",
        ]
        for text in ordinary {
            #expect(TerminalText.escaped(text) == text, "\(text.debugDescription)")
            #expect(TerminalText.escaped(Substring(text)) == text)
        }
    }

    @Test("nothing escaped leaves no raw escapable character; every escaped one is in the classes above")
    func everyScalarOfTheBasicPlane() throws {
        let classes = Set(Self.c0 + [0x7F] + Self.c1 + Self.separators + Self.bidi)
        for value in UInt32(0)...0xFFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let expected = classes.contains(value)
            #expect(TerminalText.isUnprintable(scalar) == expected || [0x09, 0x0A, 0x0D].contains(value),
                    "U+\(String(value, radix: 16))")
            let escaped = TerminalText.escaped(String(scalar))
            #expect(escaped.unicodeScalars.allSatisfy { !classes.contains($0.value) && $0 != "\t" && $0 != "\n" },
                    "U+\(String(value, radix: 16)) left raw")
        }
    }
}
