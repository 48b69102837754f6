import Foundation
import JSONText
import Testing

/// The characters a JSON string may hold raw but the project's JSON never prints raw: U+007F, the C1 controls
/// U+0080–U+009F (U+009B is ESC [ to a terminal) and the separators U+2028 and U+2029 (line breaks to JavaScript and
/// to log viewers), and the bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069 (they
/// reorder a line shown in a terminal). `JSONTextWriter.string` escapes them, and so does `JSONOutput` in
/// `JSONEncoder`'s documents.
@Suite("JSON escapes of DEL, the C1 controls, U+2028/U+2029 and the bidirectional controls")
struct JSONControlEscapingTests {
    /// Each such character and its escape.
    static let escaped: [(Unicode.Scalar, String)] = (
        [0x7F] + Array(0x80...0x9F) + [0x2028, 0x2029] + [0x061C, 0x200E, 0x200F] + Array(0x202A...0x202E)
            + Array(0x2066...0x2069)
    ).compactMap { value in
        let hex = String(value, radix: 16)
        return Unicode.Scalar(UInt32(value)).map { ($0, "\\u" + String(repeating: "0", count: 4 - hex.count) + hex) }
    }

    /// Their neighbours in UTF-8 (same first byte, or the next scalar): copied as they are.
    static let neighbours: [Unicode.Scalar] = [
        "\u{7E}", "\u{A0}", "\u{A3}", "\u{BF}", "\u{C2}", "\u{D8}", "\u{E2}", "\u{61B}", "\u{61D}", "\u{600}",
        "\u{200D}", "\u{2010}", "\u{2027}", "\u{202F}", "\u{2030}", "\u{2065}", "\u{206A}", "\u{20AC}",
    ]

    /// The raw UTF-8 bytes of every escaped character, looked for in a text.
    static func holdsRaw(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in Self.escaped.contains { $0.0 == scalar } }
    }

    @Test("each is escaped as \\uXXXX at every position of a string (either side of the 8-byte words)",
          arguments: 0...17)
    func escapedAtEveryPosition(position: Int) throws {
        let letters = Array("abcdefghijklmnopq")
        let prefix = String(letters[..<position])
        let suffix = String(letters[position...])
        for (scalar, escape) in Self.escaped {
            let text = prefix + String(scalar) + suffix
            var writer = JSONTextWriter()
            writer.string(text)
            let written = String(decoding: writer.bytes, as: UTF8.self)
            let name = "U+\(String(scalar.value, radix: 16)) at \(position)"
            #expect(written == "\"" + prefix + escape + suffix + "\"", "\(name)")
            let parsed = try JSONSerialization.jsonObject(with: Data(writer.bytes), options: .fragmentsAllowed)
            #expect(parsed as? String == text, "\(name)")
        }
    }

    @Test("next to quotes, backslashes, C0 controls and each other; their UTF-8 neighbours are copied as they are")
    func mixed() throws {
        let text = "\u{9B}31m\"\u{7F}\\\u{1B}\u{2028}\u{2029}\u{85}é£\u{A0}\u{2027}\u{202A}€\u{9F}\u{2066}\u{61C}"
        var writer = JSONTextWriter()
        writer.string(text)
        #expect(String(decoding: writer.bytes, as: UTF8.self)
            == #""\u009b31m\"\u007f\\\u001b\u2028\u2029\u0085é£"# + "\u{A0}\u{2027}" + #"\u202a€\u009f\u2066\u061c""#)
        let parsed = try JSONSerialization.jsonObject(with: Data(writer.bytes), options: .fragmentsAllowed)
        #expect(parsed as? String == text)

        for neighbour in Self.neighbours {
            let plain = "0123456789" + String(neighbour) + "abc"
            var copied = JSONTextWriter()
            copied.string(plain)
            #expect(copied.bytes == Array(("\"" + plain + "\"").utf8), "U+\(String(neighbour.value, radix: 16))")
        }
    }

    @Test("a JSONEncoder document: every one escaped, the rest byte for byte, the same value after parsing")
    func document() throws {
        let value = [
            "sku": "evil\u{9B}31m\u{7F}\u{2028}line\u{2029}\u{85}",
            "title": "caf\u{E9} £1 \u{202A}€\u{A0}\u{202E}",
            "quoted\u{9B}key": "\u{1B}[2J\"\\/",
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let raw = Array(try encoder.encode(value))
        #expect(Self.holdsRaw(String(decoding: raw, as: UTF8.self)), "JSONEncoder now escapes them: JSONOutput may go")

        let escaped = JSONTextWriter.escapingControls(inDocument: raw)
        let text = String(decoding: escaped, as: UTF8.self)
        #expect(!Self.holdsRaw(text), "\(text.debugDescription)")
        #expect(text == #"{"quoted\u009bkey":"\u001b[2J\"\\/","sku":"evil\u009b31m\u007f\u2028line\u2029\u0085","#
            + #""title":"café £1 \u202a€"# + "\u{A0}" + #"\u202e"}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(escaped)) as? [String: String] == value)

        let plain = Array(try encoder.encode(["a": "café €1 \u{202F}\u{D8}\u{61B}", "b": "\u{1B}"]))
        #expect(JSONTextWriter.escapingControls(inDocument: plain) == plain)
    }

    @Test("JSONOutput.line: keys sorted (snake case when asked), slashes as they are, the characters escaped")
    func outputLine() throws {
        struct Line: Encodable {
            var productId: String
            var sku: String
        }
        let line = Line(productId: "coins/100", sku: "x\u{85}\u{2028}\u{7F}")
        #expect(
            try JSONOutput.line(line, snakeCaseKeys: true) == #"{"product_id":"coins/100","sku":"x\u0085\u2028\u007f"}"#
        )
        #expect(try JSONOutput.line(line) == #"{"productId":"coins/100","sku":"x\u0085\u2028\u007f"}"#)
        #expect(try JSONOutput.line(["message": "a\u{9B}b"]) == #"{"message":"a\u009bb"}"#)
    }
}
