import AppStoreSignedData
import Crypto
import Foundation
import SwiftASN1
import X509

/// Signs payloads the way the App Store does: a compact JWS with `alg` ES256 and `x5c` holding the chain's leaf,
/// intermediate and root (base64 DER), signed with the leaf's key.
public struct JWSSigner: Sendable {
    public let chain: SigningChain
    /// The header, base64url, computed once.
    private let encodedHeader: String

    public init(chain: SigningChain) throws {
        self.chain = chain
        let certificates = try [chain.leaf, chain.intermediate, chain.root].map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "ES256", "x5c": certificates] as [String: Any], options: [.sortedKeys]
        )
        encodedHeader = Self.base64URL(header)
    }

    /// `payload` (JSON bytes) signed.
    public func sign(_ payload: some DataProtocol) throws -> String {
        let signingInput = encodedHeader + "." + Self.base64URL(payload)
        let signature = try chain.leafKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    public static func base64URL(_ bytes: some DataProtocol) -> String {
        Base64URL.encode(bytes)
    }
}
