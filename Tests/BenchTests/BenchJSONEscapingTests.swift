import Foundation
import Testing

@testable import Bench

/// `bench --json` prints its report through `JSONOutput`: a text field (the database's description, the source) holding
/// NEL (U+0085), CSI (U+009B), DEL, U+2028 or a bidirectional override is written as `\uXXXX`, never raw, and the line
/// parses back to the same text. The report is built with every field filled (`FillingDecoder`), every string the
/// hostile text, so a field added later needs no change here.
@Suite("bench --json escapes control characters, separators and bidirectional controls")
struct BenchJSONEscapingTests {
    static let hostile = "x\u{85}nel\u{9B}31m\u{7F}\u{2028}\u{202E}y"
    static let escapedHostile = #"x\u0085nel\u009b31m\u007f\u2028\u202ey"#

    static func isRaw(_ scalar: Unicode.Scalar) -> Bool {
        [0x85, 0x9B, 0x7F, 0x2028, 0x202E].contains(scalar.value)
    }

    static func check(_ json: String) throws {
        #expect(!json.unicodeScalars.contains(where: isRaw), "\(json.debugDescription)")
        #expect(json.contains(escapedHostile), "\(json.debugDescription)")
        #expect(!json.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["source"] as? String == hostile && object["database"] as? String == hostile)
    }

    @Test("BenchReport.json(): its strings escaped as \\uXXXX, parsing back to the text")
    func benchReport() throws {
        let report = try BenchReport(from: FillingDecoder(text: Self.hostile))
        #expect(report.source == Self.hostile && report.database == Self.hostile)
        try Self.check(report.json())
    }
}

/// A `Decoder` that makes a value of any plain `Decodable` struct: every string `text`, every number 1, every Bool
/// true, optionals present, arrays and dictionaries empty.
struct FillingDecoder: Decoder {
    let text: String
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(decoder: self))
    }

    func unkeyedContainer() -> any UnkeyedDecodingContainer { Unkeyed(codingPath: codingPath) }

    func singleValueContainer() -> any SingleValueDecodingContainer { Single(decoder: self) }

    func value<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is String.Type: return text as! T
        case is Bool.Type: return true as! T
        case is Double.Type: return 1.0 as! T
        case is Float.Type: return Float(1) as! T
        case is Int.Type: return 1 as! T
        case is Int64.Type: return Int64(1) as! T
        case is UInt64.Type: return UInt64(1) as! T
        default: return try T(from: self)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: FillingDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.value(type) }
        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) -> KeyedDecodingContainer<NestedKey> {
            decoder.container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedDecodingContainer { decoder.unkeyedContainer() }
        func superDecoder() -> any Decoder { decoder }
        func superDecoder(forKey key: Key) -> any Decoder { decoder }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey]
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        mutating func decodeNil() -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "empty"))
        }
        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "empty"))
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "empty"))
        }
        mutating func superDecoder() throws -> any Decoder {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "empty"))
        }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: FillingDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.value(type) }
    }
}
