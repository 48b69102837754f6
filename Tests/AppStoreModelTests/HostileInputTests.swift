@testable import AppStoreModel
import Foundation
import Testing

/// Input that used to end the process instead of failing to decode. Each of these traps (the whole test process dies)
/// when its check is removed.
@Suite("JSONModel: hostile input is a decoding error, never a trap")
struct HostileInputTests {
    private struct Member: Decodable { var a: Int? }

    /// `{"a":` then 512 `[`: Foundation's JSONDecoder traps when its 513th level opens on the input's last byte.
    static let nestedToTheEnd = Array(#"{"status":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 512)

    @Test("nesting that ends the input at JSONDecoder's limit is refused before JSONDecoder sees it")
    func nestingAtTheEnd() throws {
        #expect(throws: DecodingError.self) { try BoundedJSON.decode(Member.self, from: Self.nestedToTheEnd) }
        #expect(throws: DecodingError.self) { try VerifyReceiptResponse.decode(Self.nestedToTheEnd) }
        #expect(throws: DecodingError.self) {
            try VerifyReceiptResponse.decode(Array(repeating: UInt8(ascii: "["), count: 513))
        }
        // In a string, brackets are text: no depth.
        let inString = Array(#"{"status":0,"environment":""#.utf8) + Array(repeating: UInt8(ascii: "["), count: 600)
            + Array(#""}"#.utf8)
        #expect(try VerifyReceiptResponse.decode(inString).status == 0)
    }

    @Test("nesting up to the bound decodes; one level more is refused")
    func depthBound() throws {
        func nested(_ depth: Int) -> [UInt8] {
            Array(#"{"status":0,"x":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: depth - 1)
                + Array(repeating: UInt8(ascii: "]"), count: depth - 1) + Array("}".utf8)
        }
        #expect(try VerifyReceiptResponse.decode(nested(BoundedJSON.maxDepth)).status == 0)
        #expect(throws: DecodingError.self) { try VerifyReceiptResponse.decode(nested(BoundedJSON.maxDepth + 1)) }
    }

    @Test("numbers past Int64 or with a fraction, where an integer is read, are decoding errors")
    func hugeNumbers() throws {
        for number in ["1e300", "-1e300", "9223372036854775808", "-9223372036854775809", "\"1e300\""] {
            #expect(throws: DecodingError.self, "status \(number)") {
                try VerifyReceiptResponse.decode(Array(#"{"status":\#(number)}"#.utf8))
            }
        }
        // -0 is zero.
        #expect(try VerifyReceiptResponse.decode(Array(#"{"status":-0}"#.utf8)).status == 0)
    }

    @Test("a timestamp given as an empty string is absent on both decoding paths")
    func emptyMilliseconds() throws {
        struct Times: JSONModel {
            var at: Int64?
            static let fields: JSONFields<Self> = [.milliseconds("at", \.at)]
            static var blank: Self { Times() }
        }
        let body = Array(#"{"at":""}"#.utf8)
        // JSONScanner reads "" as absent; JSONDecoder must agree (debug builds assert that the two agree).
        #expect(try Times.decode(body).at == nil)
        #expect(try JSONDecoder().decode(Times.self, from: Data(body)).at == nil)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Times.self, from: Data(#"{"at":"x"}"#.utf8)) }
        #expect(try JSONDecoder().decode(Times.self, from: Data(#"{"at":1697679936049.7297}"#.utf8)).at == 1_697_679_936_049)
    }
}
