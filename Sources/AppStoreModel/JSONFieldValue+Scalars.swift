import JSONText

/// Strings, integers and booleans, read by the lenient rules: a string may arrive as a number or a boolean, a number
/// or a boolean as a string (`JSONScanner`'s lenient readers, `LenientCoding.swift`).
extension String: JSONFieldValue {
    public static func scan(from scanner: inout JSONScanner) throws -> String? {
        try scanner.readLenientString()
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> String? {
        try container.decodeLenientString(forKey: key)
    }

    /// A JSON string whatever the spelling (`encode` is the numbers' one: a string's description is itself).
    public func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        writer.string(self)
    }
}

extension Int64: JSONFieldValue {
    public static func scan(from scanner: inout JSONScanner) throws -> Int64? {
        try scanner.readLenientInt64()
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> Int64? {
        try container.decodeLenientInt64(forKey: key)
    }
}

extension Int: JSONFieldValue {
    public static func scan(from scanner: inout JSONScanner) throws -> Int? {
        try scanner.readLenientInt64().flatMap { Int(exactly: $0) }
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> Int? {
        try container.decodeLenientInt64(forKey: key).flatMap { Int(exactly: $0) }
    }
}

extension Bool: JSONFieldValue {
    public static func scan(from scanner: inout JSONScanner) throws -> Bool? {
        try scanner.readLenientBool()
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> Bool? {
        try container.decodeLenientBool(forKey: key)
    }
}

/// Numbers and booleans are written as their description: in a JSON string (`"1"`, `"false"`) or as they are.
extension JSONFieldValue where Self: LosslessStringConvertible & Encodable {
    public func encode<Key: CodingKey>(
        to container: inout KeyedEncodingContainer<Key>,
        forKey key: Key,
        as spelling: JSONSpelling
    ) throws {
        switch spelling {
        case .string: try container.encode(description, forKey: key)
        case .native: try container.encode(self, forKey: key)
        }
    }

    public func write(to writer: inout JSONTextWriter, as spelling: JSONSpelling) {
        switch spelling {
        case .string: writer.string(description)
        case .native: writer.raw(description)
        }
    }
}
