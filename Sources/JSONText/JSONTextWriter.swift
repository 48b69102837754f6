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
        bytes.append(UInt8(ascii: "\""))
        // Most strings (ids, dates, product ids) need no escaping: copied in one go.
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return false
            }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
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

    private static let hex = Array("0123456789abcdef".utf8)
}
