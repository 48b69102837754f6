/// A small, fast JSON writer for the hot paths (Apple's answers in the fake App Store, the request body, the
/// receipt_complete() payload). Debug builds compare its output with JSONEncoder's where it is used.
public struct JSONTextWriter {
    public var bytes: [UInt8] = []
    private var first = true

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    public mutating func close() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    public mutating func key(_ key: some CodingKey) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        string(key.stringValue)
        bytes.append(UInt8(ascii: ":"))
    }

    /// A key known when the program is built (a model's field name).
    public mutating func key(_ name: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        name.withUTF8Buffer { quoted($0) }
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func member(_ key: some CodingKey, _ value: String?) {
        guard let value else { return }
        self.key(key)
        string(value)
    }

    public mutating func member(_ key: some CodingKey, _ value: Int64?) {
        guard let value else { return }
        self.key(key)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends already encoded JSON as it is.
    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func array<Element>(_ elements: [Element], _ write: (inout JSONTextWriter, Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// A JSON string: `"` and `\` escaped; as `\uXXXX` the control characters (below U+0020, U+007F and the C1
    /// controls U+0080–U+009F: a terminal takes U+009B as ESC [), the line and paragraph separators U+2028 and
    /// U+2029 (line breaks to JavaScript and to many log viewers) and the bidirectional controls (U+061C, U+200E,
    /// U+200F, U+202A–U+202E, U+2066–U+2069: they reorder a line shown in a terminal, "Trojan Source"), as
    /// `TerminalText` escapes them; everything else as UTF-8.
    public mutating func string(_ text: String) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { quoted($0) }
        if done == nil {
            var contiguous = text
            contiguous.withUTF8 { quoted($0) }
        }
    }

    private mutating func quoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings (ids, dates, product ids, keys, base64 receipts) need no escaping: copied in one go.
        guard Self.needsEscaping(utf8) else {
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if let (scalar, length) = Self.escapedScalar(utf8, at: index) {
                unicodeEscape(scalar)
                index += length
                continue
            }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                unicodeEscape(UInt16(byte))
            default:
                bytes.append(byte)
            }
            index += 1
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `\uXXXX`.
    private mutating func unicodeEscape(_ scalar: UInt16) {
        bytes.append(contentsOf: #"\u"#.utf8)
        for shift in stride(from: 12, through: 0, by: -4) {
            bytes.append(Self.hex[Int((scalar >> UInt16(shift)) & 0x0F)])
        }
    }

    /// The character at `index` of valid UTF-8 if it is one a JSON string may hold raw but `string(_:)` escapes:
    /// U+007F, U+0080–U+009F (C2 80–9F), U+061C (D8 9C), U+200E, U+200F, U+2028–U+202E (E2 80 8E, 8F, A8–AE) or
    /// U+2066–U+2069 (E2 81 A6–A9); its scalar and its length in bytes.
    private static func escapedScalar(
        _ utf8: UnsafeBufferPointer<UInt8>, at index: Int
    ) -> (scalar: UInt16, length: Int)? {
        switch utf8[index] {
        case 0x7F:
            return (0x7F, 1)
        case 0xC2 where index + 1 < utf8.count && (0x80...0x9F).contains(utf8[index + 1]):
            return (UInt16(utf8[index + 1]), 2)
        case 0xD8 where index + 1 < utf8.count && utf8[index + 1] == 0x9C:
            return (0x061C, 2)
        case 0xE2 where index + 2 < utf8.count:
            let second = utf8[index + 1]
            let third = utf8[index + 2]
            let escaped = second == 0x80 && (third == 0x8E || third == 0x8F || (0xA8...0xAE).contains(third))
                || second == 0x81 && (0xA6...0xA9).contains(third)
            guard escaped else { return nil }
            return (0x2000 | UInt16(second & 0x3F) << 6 | UInt16(third & 0x3F), 3)
        default:
            return nil
        }
    }

    /// `document`, JSON that another encoder wrote (Foundation's `JSONEncoder` leaves U+007F, the C1 controls, U+2028,
    /// U+2029 and the bidirectional controls raw), with those characters escaped as `string(_:)` escapes them. Raw, they can only be inside its
    /// strings, where `\uXXXX` is the same character: the document parses to the same value.
    public static func escapingControls(inDocument document: [UInt8]) -> [UInt8] {
        document.withUnsafeBufferPointer { utf8 in
            guard utf8.contains(where: { $0 == 0x7F || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 }) else { return document }
            var writer = JSONTextWriter(capacity: utf8.count + 64)
            var index = 0
            while index < utf8.count {
                if let (scalar, length) = escapedScalar(utf8, at: index) {
                    writer.unicodeEscape(scalar)
                    index += length
                } else {
                    writer.bytes.append(utf8[index])
                    index += 1
                }
            }
            return writer.bytes
        }
    }

    /// Whether a byte may have to be escaped (`"`, `\`, a control character below 0x20, or a byte from 0x7F up: DEL, or
    /// non-ASCII, which may be U+0080–U+009F, U+2028–U+2029 or a bidirectional control), looked for eight bytes at a
    /// time: the receipt in every request body is thousands of bytes long (base64, ASCII).
    private static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        // Per byte of a word: 0x80 where the byte is below 0x20, or zero after the XOR (bit tricks from "Bit Twiddling
        // Hacks": exact for whether any byte is, whatever the borrows do to the bytes after it).
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func below(_ word: UInt64, _ byte: UInt64) -> UInt64 { (word &- ones &* byte) & ~word & highs }
        var offset = 0
        while offset + 8 <= utf8.count {
            let word = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            // A byte from 0x7F up: its high bit, or one after adding 1 (a carry only comes out of 0xFF, itself one).
            let high = (word | (word &+ ones)) & highs
            if below(word, 0x20) | below(quote, 1) | below(backslash, 1) | high != 0 { return true }
            offset += 8
        }
        return utf8[offset...].contains {
            $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 >= 0x7F
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
