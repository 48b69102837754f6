import AppStoreSignedData
import Crypto
import Foundation
import Synchronization

/// Makes the bearer tokens of App Store Server API requests: a JWT signed ES256 with the In-App Purchase key, header
/// `{"alg": "ES256", "kid": key id, "typ": "JWT"}`, claims `iss` (issuer id), `iat`, `exp`, `aud`
/// ("appstoreconnect-v1") and `bid` (the app's bundle id). One token per bundle id is kept and reused until shortly
/// before it expires: signing costs more than the request.
final class ServerAPITokenSigner: Sendable {
    static let audience = AppStoreConnectJWT.audience

    private let keyID: String
    private let issuerID: String
    private let privateKey: ServerAPIPrivateKey
    private let lifetimeSeconds: Int
    /// A token is replaced this long before it expires, so none reaches Apple expired.
    private let renewalSeconds: Int
    private let tokens = Mutex<[String: (token: String, expires: Int)]>([:])

    init(keyID: String, issuerID: String, privateKey: ServerAPIPrivateKey, lifetimeSeconds: Double) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.privateKey = privateKey
        self.lifetimeSeconds = Int(lifetimeSeconds)
        renewalSeconds = min(60, Int(lifetimeSeconds) / 5)
    }

    /// A token for `bundleId` valid at `now` for at least `renewalSeconds` more.
    func token(bundleId: String, now: Date) throws -> String {
        let seconds = Int(now.timeIntervalSince1970)
        if let cached = tokens.withLock({ $0[bundleId] }), cached.expires - renewalSeconds > seconds {
            return cached.token
        }
        let token = try make(bundleId: bundleId, issuedAt: seconds)
        tokens.withLock { $0[bundleId] = (token, seconds + lifetimeSeconds) }
        return token
    }

    /// A new token issued at `issuedAt` (seconds since 1970).
    func make(bundleId: String, issuedAt: Int) throws -> String {
        try AppStoreConnectJWT.sign(
            keyID: keyID, issuerID: issuerID, issuedAt: issuedAt, expires: issuedAt + lifetimeSeconds,
            bundleID: bundleId, key: privateKey
        )
    }
}
