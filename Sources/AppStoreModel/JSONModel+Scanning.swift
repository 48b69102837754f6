import Foundation

/// Decoding without Foundation's `JSONDecoder` on the hot path: the fields and lenient rules of the `Decodable`
/// conformance, read by `JSONScanner`. Whatever the scanner does not handle throws `JSONScanner.Unsupported`;
/// `decode(_:)` then asks `JSONDecoder`, whose answer or error is the reference. Debug builds decode every input both
/// ways and check that they agree.
extension JSONModel {
    /// The document in `body`, as `JSONDecoder` would decode it (and with its errors).
    public static func decode(_ body: [UInt8]) throws -> Self {
        guard let fast = try? scanned(body) else {
            return try BoundedJSON.decode(Self.self, from: body)
        }
        #if DEBUG
        let reference = try? BoundedJSON.decode(Self.self, from: body)
        assert(reference == fast, "JSONScanner and JSONDecoder disagree on a \(Self.self)")
        #endif
        return fast
    }

    /// The document in `body` read by `JSONScanner` alone.
    static func scanned(_ body: [UInt8]) throws -> Self {
        var scanner = JSONScanner(body)
        scanner.skipWhitespace()
        let model = try Self(scanning: &scanner)
        try scanner.finish()
        return model
    }

    public init(scanning scanner: inout JSONScanner) throws {
        let fields = Self.fields
        var model = Self.blank
        // One bit per field whatever its name: a member given twice, or under two of its names, goes to JSONDecoder.
        var seen = JSONScanner.SeenKeys()
        var present: UInt64 = 0
        try scanner.readObject { scanner, key in
            guard let index = fields.index(of: key) else { return try scanner.skipValue() }
            try seen.insert(index)
            if try fields.all[index].scan(&scanner, &model) { present |= 1 << UInt64(index) }
        }
        guard present & fields.requiredMask == fields.requiredMask else { throw JSONScanner.Unsupported() }
        self = model
    }

    public static func scan(from scanner: inout JSONScanner) throws -> Self? {
        try scanner.readNull() ? nil : try Self(scanning: &scanner)
    }
}
