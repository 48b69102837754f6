import JSONText

/// One member of a `JSONModel`: its key, the property it fills, and how its value is read and written (from the
/// property's type, a `JSONFieldValue`). Made by `value` or `required`, which give every path its part at once.
public struct JSONField<Root>: Sendable {
    /// The member's name, as Apple writes it.
    public let key: StaticString
    /// Other names read when `key` is absent or null (`is-retryable` beside `is_retryable`); never written.
    public let alternativeKeys: [StaticString]
    /// `key` then `alternativeKeys`, as coding keys.
    let codingKeys: [JSONFieldKey]
    /// The decoding error's message when the member is absent or null; nil when it may be.
    let missingMessage: String?

    /// Reads the value at the scanner's position into the property; false for null (the property is left as it is).
    let scan: @Sendable (inout JSONScanner, inout Root) throws -> Bool
    /// Decodes the member under one of its keys into the property; false when absent or null.
    let decode: @Sendable (KeyedDecodingContainer<JSONFieldKey>, JSONFieldKey, inout Root) throws -> Bool
    /// Encodes the property of the model at the pointer under `key` (nothing for nil).
    let encode: @Sendable (UnsafePointer<Root>, inout KeyedEncodingContainer<JSONFieldKey>, JSONFieldKey) throws -> Void
    /// Writes `"key":value` for the model at the pointer (nothing for nil).
    let write: @Sendable (UnsafePointer<Root>, inout JSONTextWriter) -> Void

    /// A member whose property is optional (nil when the member is absent or null, left out when nil) or not (it
    /// keeps its blank value, `""` or `false`, when absent or null, and is always written).
    public static func value<Value: JSONFieldValue>(
        _ key: StaticString,
        _ path: WritableKeyPath<Root, Value> & Sendable,
        as spelling: JSONSpelling = .string,
        alternativeKeys: [StaticString] = []
    ) -> JSONField {
        JSONField(key: key, alternativeKeys: alternativeKeys, path: path, spelling: spelling, missingMessage: nil)
    }

    /// A member the document must have: absent or null, decoding fails with `missing` as the message.
    public static func required<Value: JSONFieldValue>(
        _ key: StaticString,
        _ path: WritableKeyPath<Root, Value> & Sendable,
        as spelling: JSONSpelling = .string,
        missing: String
    ) -> JSONField {
        JSONField(key: key, alternativeKeys: [], path: path, spelling: spelling, missingMessage: missing)
    }

    /// Milliseconds since 1970 as StoreKit 2 payloads carry them: an integer (or a string of digits); Xcode writes a
    /// fraction, which is dropped (a value beyond Int64 is a decoding error, never a trap).
    public static func milliseconds(_ key: StaticString, _ path: WritableKeyPath<Root, Int64?> & Sendable) -> JSONField {
        JSONField(
            key: key, alternativeKeys: [], path: path, spelling: .native, missingMessage: nil,
            decodeValue: { container, codingKey in
                // An integer, a string of digits, or nothing (absent, null, an empty string: nil, as the scanner has
                // it); anything else may be a number with a fraction.
                if let whole = try? container.decodeLenientInt64(forKey: codingKey) { return .some(whole) }
                guard let number = try? container.decodeIfPresent(Double.self, forKey: codingKey) else {
                    return try container.decodeLenientInt64(forKey: codingKey).map { .some($0) }
                }
                guard let whole = Int64(exactly: number.rounded(.down)) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: codingKey, in: container, debugDescription: "\(number) is not a time in milliseconds"
                    )
                }
                return .some(whole)
            }
        )
    }

    private init<Value: JSONFieldValue>(
        key: StaticString,
        alternativeKeys: [StaticString],
        path: WritableKeyPath<Root, Value> & Sendable,
        spelling: JSONSpelling,
        missingMessage: String?,
        decodeValue: @escaping @Sendable (KeyedDecodingContainer<JSONFieldKey>, JSONFieldKey) throws -> Value? =
            { container, codingKey in try Value.decode(from: container, forKey: codingKey) }
    ) {
        self.key = key
        self.alternativeKeys = alternativeKeys
        codingKeys = ([key] + alternativeKeys).map { JSONFieldKey(stringValue: $0.description) }
        self.missingMessage = missingMessage
        let property = StoredProperty(path)
        scan = { scanner, root in
            guard let value = try Value.scan(from: &scanner) else { return false }
            property.set(value, in: &root)
            return true
        }
        decode = { container, codingKey, root in
            guard let value = try decodeValue(container, codingKey) else { return false }
            property.set(value, in: &root)
            return true
        }
        encode = { root, container, codingKey in
            try property.with(root) { value in try value.encode(to: &container, forKey: codingKey, as: spelling) }
        }
        write = { root, writer in
            property.with(root) { value in value.write(member: key, to: &writer, as: spelling) }
        }
    }
}

/// A member's name as a coding key: the models decode and encode through a keyed container of these.
struct JSONFieldKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        nil
    }
}
