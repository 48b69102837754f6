/// A forward-only reader over UTF-8 JSON for the hot paths (every Apple answer, every request the fake App Store
/// reads). It handles the shapes Apple sends and refuses everything else, duplicate keys, numbers with a fraction
/// or an exponent and invalid UTF-8 included, by throwing `JSONScanner.Unsupported`: the caller then decodes with
/// Foundation's `JSONDecoder`, whose answer (or error message) is the reference. So the scanner may be strict, never
/// different.
public struct JSONScanner {
    /// The input needs the general decoder.
    public struct Unsupported: Error {
        public init() {}
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private static let maxDepth = 64

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: Structure

    /// Reads one object, calling `body` with each member's key; `body` must read or skip the value.
    public mutating func readObject(_ body: (inout JSONScanner, Key) throws -> Void) throws {
        try enter(UInt8(ascii: "{"))
        defer { depth -= 1 }
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let key = try readKey()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            try body(&self, key)
            skipWhitespace()
            switch try next() {
            case UInt8(ascii: ","): skipWhitespace()
            case UInt8(ascii: "}"): return
            default: throw Unsupported()
            }
        }
    }

    /// Reads one array, calling `body` for each element; `body` must read or skip it.
    public mutating func readArray(_ body: (inout JSONScanner) throws -> Void) throws {
        try enter(UInt8(ascii: "["))
        defer { depth -= 1 }
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            try body(&self)
            skipWhitespace()
            switch try next() {
            case UInt8(ascii: ","): skipWhitespace()
            case UInt8(ascii: "]"): return
            default: throw Unsupported()
            }
        }
    }

    /// Consumes `null` if it comes next.
    public mutating func readNull() throws -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    /// Checks that only whitespace is left.
    public mutating func finish() throws {
        skipWhitespace()
        guard index == bytes.count else { throw Unsupported() }
    }

    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Skips one value of any kind, checking it as strictly as the readers do.
    public mutating func skipValue() throws {
        switch try peek() {
        case UInt8(ascii: "{"): try readObject { scanner, _ in try scanner.skipValue() }
        case UInt8(ascii: "["): try readArray { scanner in try scanner.skipValue() }
        case UInt8(ascii: "\""): _ = try readString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try readInteger()
        }
    }

    // MARK: Lenient scalars (the rules of `LenientCoding.swift`)

    /// A string, or an integer or boolean spelled as one; nil for null.
    public mutating func readLenientString() throws -> String? {
        switch try peek() {
        case UInt8(ascii: "\""): return try readString()
        case UInt8(ascii: "n"):
            try literal("null")
            return nil
        case UInt8(ascii: "t"):
            try literal("true")
            return "true"
        case UInt8(ascii: "f"):
            try literal("false")
            return "false"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return String(try readInteger())
        default: throw Unsupported()
        }
    }

    /// An integer, as a number or a string of digits; nil for null or an empty string.
    public mutating func readLenientInt64() throws -> Int64? {
        switch try peek() {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readInteger()
        default:
            if let value = readQuotedInteger() { return value }
            guard let text = try readLenientString() else { return nil }
            let trimmed = text.trimmingSpaces()
            if trimmed.isEmpty { return nil }
            guard let value = Int64(trimmed) else { throw Unsupported() }
            return value
        }
    }

    /// true/false, "true"/"false", 1/0 or "1"/"0"; nil for null or an empty string.
    public mutating func readLenientBool() throws -> Bool? {
        if readQuoted("false") || readQuoted("0") { return false }
        if readQuoted("true") || readQuoted("1") { return true }
        switch try peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default:
            switch try readLenientString()?.trimmingSpaces().lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            case nil, "": return nil
            default: throw Unsupported()
            }
        }
    }

    // MARK: Tokens

    /// A string value, unescaped; invalid UTF-8 and raw control characters are refused.
    public mutating func readString() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        var plain = true
        var ascii = true
        while true {
            let byte = try next()
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                plain = false
                guard index < bytes.count else { throw Unsupported() }
                index += 1
            } else if byte < 0x20 {
                throw Unsupported()
            } else if byte >= 0x80 {
                ascii = false
            }
        }
        let end = index - 1
        if plain {
            // ASCII is UTF-8 as it stands: no validation (whose generic decoder costs more than the copy).
            if ascii { return String(decoding: bytes[start..<end], as: UTF8.self) }
            guard let text = String(validating: bytes[start..<end], as: UTF8.self) else { throw Unsupported() }
            return text
        }
        return try unescape(start..<end)
    }

    private func unescape(_ range: Range<Int>) throws -> String {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var position = range.lowerBound
        while position < range.upperBound {
            let byte = bytes[position]
            position += 1
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                continue
            }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4(at: &position, end: range.upperBound)
                if (0xD800..<0xDC00).contains(scalar) {
                    // A high surrogate must be followed by \u and a low one.
                    guard position + 1 < range.upperBound, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u")
                    else { throw Unsupported() }
                    position += 2
                    let low = try hex4(at: &position, end: range.upperBound)
                    guard (0xDC00..<0xE000).contains(low) else { throw Unsupported() }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw Unsupported() }
                output.append(contentsOf: String(Character(unicode)).utf8)
            default:
                throw Unsupported()
            }
        }
        guard let text = String(validating: output, as: UTF8.self) else { throw Unsupported() }
        return text
    }

    private func hex4(at position: inout Int, end: Int) throws -> UInt32 {
        guard position + 4 <= end else { throw Unsupported() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            position += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Unsupported()
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// A string that holds nothing but an integer of at most 18 digits, optionally negative ("1594755400000", "1"):
    /// how Apple spells its numbers, read from the bytes without making a String. nil, and the scanner left where it
    /// was, for any other value.
    private mutating func readQuotedInteger() -> Int64? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        var position = index + 1
        let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let digits = position
        var magnitude: Int64 = 0
        while position < bytes.count, position - digits < 18 {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit <= 9 else { break }
            magnitude = magnitude * 10 + Int64(digit)
            position += 1
        }
        guard position > digits, position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        index = position + 1
        return negative ? -magnitude : magnitude
    }

    /// Consumes the string `"word"` if it comes next, spelled exactly so.
    private mutating func readQuoted(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\""),
            bytes[index + count + 1] == UInt8(ascii: "\"")
        else { return false }
        for offset in 0..<count where bytes[index + 1 + offset] != word.utf8Start[offset] { return false }
        index += count + 2
        return true
    }

    /// An integer without fraction or exponent that fits in Int64 (anything else goes to the general decoder).
    public mutating func readInteger() throws -> Int64 {
        var negative = false
        if try peek() == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var magnitude: UInt64 = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw Unsupported() }
            magnitude = sum
            index += 1
        }
        let digits = index - start
        guard digits > 0, !(digits > 1 && bytes[start] == UInt8(ascii: "0")) else { throw Unsupported() }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): throw Unsupported()
            default: break
            }
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw Unsupported() }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw Unsupported() }
        return Int64(magnitude)
    }

    /// An object key: its raw bytes (keys with escapes go to the general decoder).
    private mutating func readKey() throws -> Key {
        try expect(UInt8(ascii: "\""))
        let start = index
        while true {
            let byte = try next()
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { throw Unsupported() }
        }
        return Key(bytes: bytes[start..<(index - 1)])
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Unsupported() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Unsupported() }
        index += count
    }

    private mutating func enter(_ opening: UInt8) throws {
        try expect(opening)
        depth += 1
        guard depth <= Self.maxDepth else { throw Unsupported() }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try next() == byte else { throw Unsupported() }
    }

    private mutating func next() throws -> UInt8 {
        guard index < bytes.count else { throw Unsupported() }
        defer { index += 1 }
        return bytes[index]
    }

    private func peek() throws -> UInt8 {
        guard index < bytes.count else { throw Unsupported() }
        return bytes[index]
    }

    /// An object key as raw ASCII bytes; matched in a `switch` against string literals.
    public struct Key {
        let bytes: ArraySlice<UInt8>

        public static func ~= (pattern: StaticString, key: Key) -> Bool {
            guard pattern.utf8CodeUnitCount == key.bytes.count else { return false }
            var offset = 0
            for byte in key.bytes {
                if byte != pattern.utf8Start[offset] { return false }
                offset += 1
            }
            return true
        }
    }

    /// Remembers which keys of one object were read, so a repeated key sends the input to the general decoder
    /// (which takes the first occurrence).
    public struct SeenKeys {
        private var bits: UInt64 = 0
        public init() {}

        public mutating func insert(_ field: Int) throws {
            let bit: UInt64 = 1 << UInt64(field)
            guard bits & bit == 0 else { throw Unsupported() }
            bits |= bit
        }
    }
}
