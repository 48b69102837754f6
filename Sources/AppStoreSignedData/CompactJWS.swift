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

    /// The header as sent (base64url): the same for every JWS one certificate chain signs, so it keys the
    /// verifier's chain cache without decoding it.
    public let encodedHeader: String
    /// The payload's bytes (JSON).
    public let payload: [UInt8]
    /// What the signature covers: the first two parts as sent, with the dot between them.
    public let signingInput: [UInt8]
    public let signature: [UInt8]

    /// The largest JWS accepted: Apple's signed transactions are a few kilobytes, notifications somewhat more.
    public static let maximumBytes = 256 * 1024

    public init(_ text: String) throws(SignedDataError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= Self.maximumBytes else {
            throw SignedDataError(.malformed, "the JWS is \(trimmed.utf8.count) bytes, over \(Self.maximumBytes)")
        }
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw SignedDataError(.malformed, "a JWS has three parts separated by dots, this has \(parts.count)")
        }
        guard let payload = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]) else {
            throw SignedDataError(.malformed, "a part of the JWS is not base64url")
        }
        encodedHeader = String(parts[0])
        self.payload = payload
        self.signature = signature
        signingInput = Array(trimmed.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }

    /// The header, decoded.
    public func header() throws(SignedDataError) -> Header {
        guard let bytes = Base64URL.decode(Substring(encodedHeader)) else {
            throw SignedDataError(.malformed, "a part of the JWS is not base64url")
        }
        do {
            return try JSONDecoder().decode(Header.self, from: Data(bytes))
        } catch {
            throw SignedDataError(.malformed, "the JWS header is not a JSON object with string fields")
        }
    }
}
