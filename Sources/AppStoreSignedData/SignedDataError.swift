/// Why signed data (a JWS from Apple) was not accepted.
public struct SignedDataError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Not a JWS in compact form, a header or payload that is not JSON, a certificate that does not parse.
        case malformed
        /// `alg` is not ES256, or `x5c` is missing or not leaf, intermediate and root.
        case unsupportedHeader
        /// The chain does not lead to a trusted root, a certificate lacks Apple's OID, one was not valid at the
        /// validation time, or one is revoked.
        case untrustedChain
        /// The ES256 signature does not match the leaf certificate's key.
        case badSignature
        /// Signed by Xcode or for StoreKit local testing, not by the App Store, and such data is not allowed.
        case testEnvironment
        /// The revocation check (OCSP) could not be made: no verdict, try again later.
        case revocationUnavailable
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// True when asking again later may succeed (the revocation check could not reach its responder).
    public var isRetryable: Bool { code == .revocationUnavailable }

    public var description: String { message }
}
