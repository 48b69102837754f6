import AppStoreSignedData
import Crypto
import Foundation

/// The JSON Web Token that authorizes a request to Apple's APIs signed with a key from App Store Connect: header
/// `{"alg": "ES256", "kid": key id, "typ": "JWT"}`, claims `iss` (the issuer id), `iat`, `exp`, `aud`
/// ("appstoreconnect-v1") and, for the App Store Server API (In-App Purchase key), `bid` (the app's bundle id).
/// The App Store Connect API (an App Store Connect API key, e.g. for sales reports) takes the same token without `bid`.
public enum AppStoreConnectJWT {
    public static let audience = "appstoreconnect-v1"

    /// A token signed by `key`, issued at `issuedAt` and expiring at `expires` (seconds since 1970); `bundleID` nil
    /// leaves the `bid` claim out.
    public static func sign(
        keyID: String, issuerID: String, issuedAt: Int, expires: Int, bundleID: String?, key: ServerAPIPrivateKey
    ) throws -> String {
        try sign(
            keyID: keyID, issuerID: issuerID, issuedAt: issuedAt, expires: expires, bundleID: bundleID, key: key.key
        )
    }

    static func sign(
        keyID: String, issuerID: String, issuedAt: Int, expires: Int, bundleID: String?,
        key: P256.Signing.PrivateKey
    ) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = try encoder.encode(Header(alg: "ES256", kid: keyID, typ: "JWT"))
        let claims = try encoder.encode(
            Claims(iss: issuerID, iat: issuedAt, exp: expires, aud: audience, bid: bundleID)
        )
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    private struct Header: Encodable {
        var alg: String
        var kid: String
        var typ: String
    }

    /// `bid` is left out when nil (`encodeIfPresent`).
    private struct Claims: Encodable {
        var iss: String
        var iat: Int
        var exp: Int
        var aud: String
        var bid: String?
    }
}
