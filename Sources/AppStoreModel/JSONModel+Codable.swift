/// `Codable` from the declared fields: each one decoded under its key, then under its alternative keys while it is
/// still absent or null, in declaration order (so the first error is the first field's); encoded under its key.
extension JSONModel {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: JSONFieldKey.self)
        var model = Self.blank
        for field in Self.fields.all {
            var found = false
            for key in field.codingKeys where !found {
                found = try field.decode(container, key, &model)
            }
            if !found, let missing = field.missingMessage {
                throw DecodingError.keyNotFound(
                    field.codingKeys[0], .init(codingPath: container.codingPath, debugDescription: missing)
                )
            }
        }
        self = model
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONFieldKey.self)
        try withUnsafePointer(to: self) { model in
            for field in Self.fields.all {
                try field.encode(model, &container, field.codingKeys[0])
            }
        }
    }

    public static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>,
        forKey key: Key
    ) throws -> Self? {
        try container.decodeIfPresent(Self.self, forKey: key)
    }
}
