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

    /// A JSON string: `"` and `\` escaped, control characters as `\u00XX`, everything else as UTF-8.
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
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether a byte must be escaped (`"`, `\`, a control character), looked for eight bytes at a time: the receipt
    /// in every request body is thousands of bytes long.
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
            if below(word, 0x20) | below(quote, 1) | below(backslash, 1) != 0 { return true }
            offset += 8
        }
        return utf8[offset...].contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
