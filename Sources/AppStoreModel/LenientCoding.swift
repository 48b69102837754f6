/// Apple sends most values as strings ("1", "false", milliseconds as strings) but some ids as numbers, and other
/// sources do the opposite. These helpers accept either spelling and never fail on an absent or null field.
extension KeyedDecodingContainer {
    /// A value that may arrive as a string or a number, returned as a string.
    func decodeLenientString(forKey key: Key) throws -> String? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let string = try? decode(String.self, forKey: key) { return string }
        if let integer = try? decode(Int64.self, forKey: key) { return String(integer) }
        if let double = try? decode(Double.self, forKey: key) {
            return double.rounded() == double && abs(double) < 1e18 ? String(Int64(double)) : String(double)
        }
        if let bool = try? decode(Bool.self, forKey: key) { return String(bool) }
        throw DecodingError.typeMismatch(
            String.self,
            .init(codingPath: codingPath + [key], debugDescription: "expected a string or a number")
        )
    }

    /// An integer that may arrive as a number or as a string of digits.
    func decodeLenientInt64(forKey key: Key) throws -> Int64? {
        guard let text = try decodeLenientString(forKey: key) else { return nil }
        let trimmed = text.trimmingSpaces()
        if trimmed.isEmpty { return nil }
        guard let value = Int64(trimmed) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "expected an integer, found \"\(text.prefix(40))\""
            )
        }
        return value
    }

    /// A boolean spelled as true/false, "true"/"false", 1/0 or "1"/"0".
    func decodeLenientBool(forKey key: Key) throws -> Bool? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let bool = try? decode(Bool.self, forKey: key) { return bool }
        switch try decodeLenientString(forKey: key)?.trimmingSpaces().lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        case nil, "": return nil
        case let other?:
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "expected a boolean, found \"\(other.prefix(40))\""
            )
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
