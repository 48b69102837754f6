import JSONText

/// How a number or a boolean is written: inside the receipt Apple writes them as strings (`"1"`, `"false"`), at the
/// top level of its answer as JSON numbers and booleans. Strings, objects and arrays are written the same either way.
public enum JSONSpelling: Sendable {
    /// As a JSON string: `"1594755400000"`, `"false"`.
    case string
    /// As a JSON number or boolean: `0`, `true`.
    case native
}

/// The type of a `JSONModel` property: how its value is read by `JSONScanner` and by `Decodable` (the same lenient
/// rules, `LenientCoding.swift`), encoded and written. Strings, integers, booleans, models, arrays of models, and
/// optionals of these.
public protocol JSONFieldValue: Sendable {
    /// The value at the scanner's position; nil for null (and, for numbers and booleans, an empty string).
    static func scan(from scanner: inout JSONScanner) throws -> Self?

    /// The member under `key`; nil when it is absent or null (and, for numbers and booleans, an empty string).
    static func decode<Key: CodingKey>(from container: KeyedDecodingContainer<Key>, forKey key: Key) throws -> Self?

    /// Encodes the value under `key` (nothing for nil).
    func encode<Key: CodingKey>(
        to container: inout KeyedEncodingContainer<Key>,
        forKey key: Key,
        as spelling: JSONSpelling
    ) throws

    /// Writes the value.
    func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling)

    /// Writes `"key":value` (nothing for nil).
    func write(member key: StaticString, to writer: inout JSONTextWriter, as spelling: JSONSpelling)
}

extension JSONFieldValue {
    public func write(member key: StaticString, to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        writer.key(key)
        write(to: &writer, as: spelling)
    }
}

/// Objects and arrays are encoded as `Codable` encodes them (numbers and booleans: `JSONFieldValue+Scalars.swift`).
extension JSONFieldValue where Self: Encodable {
    public func encode<Key: CodingKey>(
        to container: inout KeyedEncodingContainer<Key>,
        forKey key: Key,
        as spelling: JSONSpelling
    ) throws {
        try container.encode(self, forKey: key)
    }
}

/// An optional property: nil when the member is absent or null, left out of the output when nil.
extension Optional: JSONFieldValue where Wrapped: JSONFieldValue {
    public static func scan(from scanner: inout JSONScanner) throws -> Wrapped?? {
        try Wrapped.scan(from: &scanner).map(Optional.some)
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> Wrapped?? {
        try Wrapped.decode(from: container, forKey: key).map(Optional.some)
    }

    public func encode<Key: CodingKey>(
        to container: inout KeyedEncodingContainer<Key>,
        forKey key: Key,
        as spelling: JSONSpelling
    ) throws {
        try self?.encode(to: &container, forKey: key, as: spelling)
    }

    public func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        guard let self else { return writer.raw("null") }
        self.write(to: &writer, as: spelling)
    }

    public func write(member key: StaticString, to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        self?.write(member: key, to: &writer, as: spelling)
    }
}

/// A list of objects (`in_app`, `latest_receipt_info`, `pending_renewal_info`).
extension Array: JSONFieldValue where Element: JSONModel {
    /// Reads one array of objects at the scanner's position.
    public init(scanning scanner: inout JSONScanner) throws {
        var elements: [Element] = []
        try scanner.readArray { scanner in elements.append(try Element(scanning: &scanner)) }
        self = elements
    }

    public static func scan(from scanner: inout JSONScanner) throws -> [Element]? {
        try scanner.readNull() ? nil : try [Element](scanning: &scanner)
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> [Element]? {
        try container.decodeIfPresent([Element].self, forKey: key)
    }

    public func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        writer.array(self) { writer, element in element.write(to: &writer) }
    }
}
