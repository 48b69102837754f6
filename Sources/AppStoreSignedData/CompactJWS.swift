import AppStoreModel
import Foundation

/// A JWS in compact serialization (`header.payload.signature`, each part base64url), split and decoded but not
/// verified: nothing in it is to be trusted until `SignedDataVerifier` has checked it.
public struct CompactJWS: Sendable {
    public struct Header: Sendable, Decodable {
        public var alg: String?
        /// The certificate chain, leaf first, each certificate base64 (not base64url) DER.
        public var x5c: [String]?
        public var kid: String?
        public var typ: String?
    }

    /// The header as sent (base64url). Not a cache key: an extra member makes another text for the same chain.
    public let encodedHeader: String
    /// The payload's bytes (JSON).
    public let payload: [UInt8]
    /// What the signature covers: the first two parts as sent, with the dot between them.
    public let signingInput: [UInt8]
    public let signature: [UInt8]

    /// The largest JWS accepted: Apple's signed transactions are a few kilobytes, notifications somewhat more.
    public static let maximumBytes = 256 * 1024

    /// Splits `text` on its bytes: a JWS is ASCII, and Foundation's trimming and `String.split` (Unicode-aware, by
    /// Character) cost more than verifying the signature.
    public init(_ text: String) throws(SignedDataError) {
        let bytes = Array(text.utf8)
        var start = 0
        var end = bytes.count
        while start < end, Self.isWhitespace(bytes[start]) { start += 1 }
        while end > start, Self.isWhitespace(bytes[end - 1]) { end -= 1 }
        guard end - start <= Self.maximumBytes else {
            throw SignedDataError(.malformed, "the JWS is \(end - start) bytes, over \(Self.maximumBytes)")
        }
        var dots = 0
        var firstDot = end
        var secondDot = end
        for index in start..<end where bytes[index] == UInt8(ascii: ".") {
            dots += 1
            if dots == 1 { firstDot = index } else if dots == 2 { secondDot = index }
        }
        guard dots == 2 else {
            throw SignedDataError(.malformed, "a JWS has three parts separated by dots, this has \(dots + 1)")
        }
        guard let payload = Base64URL.decode(bytes[(firstDot + 1)..<secondDot]),
            let signature = Base64URL.decode(bytes[(secondDot + 1)..<end])
        else {
            throw SignedDataError(.malformed, "a part of the JWS is not base64url")
        }
        encodedHeader = String(decoding: bytes[start..<firstDot], as: UTF8.self)
        self.payload = payload
        self.signature = signature
        signingInput = Array(bytes[start..<secondDot])
    }

    /// The whitespace a JWS may arrive wrapped in (a pasted or line-ended value).
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || (0x09...0x0D).contains(byte)
    }

    /// The header, decoded: by `JSONScanner` (alg and x5c read, every other member skipped), else by `JSONDecoder`,
    /// the reference (a member given twice, an escape in a string).
    public func header() throws(SignedDataError) -> Header {
        guard let bytes = Base64URL.decode(Substring(encodedHeader)) else {
            throw SignedDataError(.malformed, "a part of the JWS is not base64url")
        }
        if let header = try? Self.scanHeader(bytes) { return header }
        do {
            return try BoundedJSON.decode(Header.self, from: bytes)
        } catch {
            throw SignedDataError(.malformed, "the JWS header is not a JSON object with string fields")
        }
    }

    private static func scanHeader(_ bytes: [UInt8]) throws -> Header {
        var scanner = JSONScanner(bytes)
        var seen = JSONScanner.SeenKeys()
        var header = Header()
        scanner.skipWhitespace()
        try scanner.readObject { scanner, key in
            switch key {
            case "alg":
                try seen.insert(0)
                header.alg = try scanner.readNull() ? nil : scanner.readString()
            case "x5c":
                try seen.insert(1)
                guard try !scanner.readNull() else { return }
                var certificates: [String] = []
                try scanner.readArray { scanner in
                    guard certificates.count < 8 else { throw JSONScanner.Unsupported() }
                    certificates.append(try scanner.readString())
                }
                header.x5c = certificates
            case "kid":
                try seen.insert(2)
                header.kid = try scanner.readNull() ? nil : scanner.readString()
            case "typ":
                try seen.insert(3)
                header.typ = try scanner.readNull() ? nil : scanner.readString()
            default:
                try scanner.skipValue()
            }
        }
        try scanner.finish()
        return header
    }
}
