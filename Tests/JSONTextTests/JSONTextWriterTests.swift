import JSONText
import Testing

/// `JSONTextWriter.string`: which bytes are escaped, wherever they fall in the eight-byte words the writer checks at
/// a time.
@Suite("JSONTextWriter strings")
struct JSONTextWriterTests {
    /// The bytes that must be escaped, and how.
    static let escaped: [(UInt8, String)] =
        (0..<0x20).map { byte in
            (UInt8(byte), "\\u00" + String(byte >> 4, radix: 16) + String(byte & 0x0F, radix: 16))
        } + [(UInt8(ascii: "\""), #"\""#), (UInt8(ascii: "\\"), #"\\"#)]

    @Test("a byte to escape at every position of a 19-byte string is escaped, the rest copied", arguments: 0..<19)
    func escapedAtEveryPosition(position: Int) {
        for (byte, escape) in Self.escaped {
            var text = Array("abcdefghijklmnopqrs".utf8)
            text[position] = byte
            var writer = JSONTextWriter()
            writer.string(String(decoding: text, as: UTF8.self))
            let expected = "\"" + String(decoding: text[..<position], as: UTF8.self) + escape
                + String(decoding: text[(position + 1)...], as: UTF8.self) + "\""
            #expect(writer.bytes == Array(expected.utf8), "byte \(byte) at \(position)")
        }
    }

    @Test("strings with nothing to escape, of every length up to 40, non-ASCII and base64 included, are copied as is")
    func copied() {
        for length in 0...40 {
            for alphabet in ["a/B+9=", "é€😀x", "~ !#$%&'()*,-.:;<>?@[]^_`{|}"] {
                let text = String(String(repeating: alphabet, count: 40).prefix(length))
                var writer = JSONTextWriter()
                writer.string(text)
                #expect(writer.bytes == Array(("\"" + text + "\"").utf8), "\(length) of \(alphabet)")
            }
        }
    }
}
