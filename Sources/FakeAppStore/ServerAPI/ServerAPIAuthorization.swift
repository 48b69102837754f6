import AppStoreSignedData
import Crypto
import Foundation

/// Checks the bearer token of an App Store Server API request as Apple does: a JWT whose header says ES256 and a
/// key id the fake was given, signed by that key, with `aud` "appstoreconnect-v1", a `bid`, an `exp` still ahead and
/// at most 60 minutes after `iat`, and `iss` when an issuer is configured. Reads the token with its own parsing, not
/// the client's types, so that the two cannot agree on a mistake.
struct ServerAPIAuthorization: Sendable {
    /// Public keys by key id (`kid`).
    let keys: [String: P256.Signing.PublicKey]
    let issuerID: String?
    /// The App Store Server API's tokens carry the app's `bid`; the App Store Connect API's (sales reports) do not.
    var requiresBundleID = true
    /// The longest `exp - iat` accepted: 60 minutes for the App Store Server API, 20 for the App Store Connect API.
    var maximumLifetimeSeconds: Int64 = 3600

    /// The token's `bid` (empty when none is required) when the token is good, or why not (sent in a header of the 401
    /// for tests to read).
    func check(authorization: String?, now: Int64) -> Result<String, Refusal> {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            return .failure(Refusal("no Authorization: Bearer header"))
        }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let claimBytes = Base64URL.decode(parts[1]), let signatureBytes = Base64URL.decode(parts[2]),
            let header = Self.object(headerBytes), let claims = Self.object(claimBytes)
        else {
            return .failure(Refusal("the token is not a JWT"))
        }
        guard header["alg"] as? String == "ES256", header["typ"] as? String == "JWT" else {
            return .failure(Refusal("the token's header must say alg ES256 and typ JWT"))
        }
        guard let kid = header["kid"] as? String, let key = keys[kid] else {
            return .failure(Refusal("unknown key id \(header["kid"] as? String ?? "(none)")"))
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else {
            return .failure(Refusal("the signature does not verify with key \(kid)"))
        }
        guard claims["aud"] as? String == "appstoreconnect-v1" else {
            return .failure(Refusal("aud must be appstoreconnect-v1"))
        }
        guard let issuedAt = Self.integer(claims["iat"]), let expires = Self.integer(claims["exp"]) else {
            return .failure(Refusal("iat and exp must be numbers"))
        }
        guard expires > now else { return .failure(Refusal("the token expired")) }
        guard expires - issuedAt <= maximumLifetimeSeconds, issuedAt <= now + 60 else {
            let minutes = maximumLifetimeSeconds / 60
            return .failure(Refusal("exp must be at most \(minutes) minutes after iat, and iat not in the future"))
        }
        if let issuerID, claims["iss"] as? String != issuerID {
            return .failure(Refusal("iss must be \(issuerID)"))
        }
        guard requiresBundleID else { return .success("") }
        guard let bundleId = claims["bid"] as? String, !bundleId.isEmpty else {
            return .failure(Refusal("no bid"))
        }
        return .success(bundleId)
    }

    struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    private static func integer(_ value: Any?) -> Int64? {
        (value as? NSNumber)?.int64Value
    }
}
