import AppStoreSignedData
import Foundation
import Testing

@Suite("base64url")
struct Base64URLTests {
    @Test("every length from 0 to 64 round-trips, and matches Foundation's base64 with the URL alphabet")
    func roundTrip() throws {
        for length in 0...64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let encoded = Base64URL.encode(bytes)
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(encoded == reference)
            #expect(Base64URL.decode(Substring(encoded)) == bytes)
        }
    }

    @Test("padding, the standard alphabet's + and /, whitespace, an impossible length and stray low bits are refused")
    func refusals() {
        for text in ["QQ==", "a+b/", "QU FB", "QUFBQ", "QR", "QUE=", "é"] {
            #expect(Base64URL.decode(Substring(text)) == nil, "\(text)")
        }
        #expect(Base64URL.decode("QQ") == [0x41])
    }
}
