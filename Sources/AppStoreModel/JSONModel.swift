import JSONText

/// A JSON object whose members are declared once, in `fields`. Decoding (`Decodable`, and `JSONScanner` on the hot
/// path), encoding (`Encodable`) and writing (`JSONTextWriter`) are all derived from that list, so a member cannot be
/// read by one path and forgotten by another.
///
/// Unknown members are ignored. `Decodable` is the reference: `JSONScanner` refuses what it does not handle (a
/// member given twice, or under two of its names, included) and `decode(_:)` then asks Foundation's `JSONDecoder`.
public protocol JSONModel: JSONFieldValue, Codable, Equatable {
    /// The members, in the order they are decoded, encoded and written.
    static var fields: JSONFields<Self> { get }

    /// The value before any member is read: nil for every optional property, a placeholder (`""`, `false`, `0`) for
    /// every other one, which a non-optional field keeps when its member is absent or null.
    static var blank: Self { get }

    /// Reads one object at the scanner's position. A requirement (with the default below) so that callers in other
    /// modules reach the code compiled for the type.
    init(scanning scanner: inout JSONScanner) throws

    /// Writes the object. A requirement (with the default below) for the same reason as `init(scanning:)`.
    func write(to writer: inout JSONTextWriter)

    /// The room `jsonBytes()` reserves before writing.
    var expectedJSONSize: Int { get }
}

extension JSONModel {
    public var expectedJSONSize: Int { 1024 }
}
