import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies data the App Store signed (StoreKit 2 transactions, renewal info, server notifications) the way Apple's
/// own libraries do: the header's `alg` is ES256 and its `x5c` holds leaf, intermediate and root; the ES256 signature
/// matches the leaf's key (checked first: it costs no network and no chain building); then the leaf and intermediate
/// chain to a trusted root (the embedded Apple Root CA - G3, plus roots added for tests) under RFC 5280, the
/// intermediate carries OID 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1. The root in `x5c`
/// itself is never trusted.
///
/// Validation time: with online checks, now, plus OCSP for the leaf and intermediate (a revoked certificate is a
/// rejection; any other answer than "good", or none, is a retryable failure); without, the payload's `signedDate`,
/// which is how data can be verified offline long after it was signed.
///
/// Test environments: with `allowTestEnvironments` on, data that names Xcode or LocalTesting, and no other
/// environment anywhere in it, is accepted without a signature (neither is signed by the App Store); everything
/// else is verified. `verifyNotification` holds the signed transaction and renewal info inside a notification to the
/// notification's own environment and to the way it was accepted.
///
/// A chain that passed is cached by its two certificates' bytes (with online checks for 15 minutes, as Apple's
/// libraries do; the least recently used goes first), so most calls cost one signature check. Safe to share between
/// threads: callers missing the cache for one chain wait for one validation, other chains are validated meanwhile.
public final class SignedDataVerifier: Sendable {
    public struct Configuration: Sendable {
        /// The roots a chain may end in. Apple Root CA - G3 unless tests or the fake App Store add their own.
        public var rootCertificates: [Certificate]
        /// Validate at the current time with OCSP (`true`), or at the payload's signedDate without it.
        public var onlineChecks: Bool
        /// Accept data from Xcode or StoreKit local testing (every environment in it `Xcode`, or every one
        /// `LocalTesting`) without a signature: no App Store key signs it. Never in production.
        public var allowTestEnvironments: Bool
        /// How long an online check of a chain stands before it is made again.
        public var onlineCacheSeconds: Double
        /// What one chain search may cost (`ChainSearch`).
        public var chainLimits: ChainSearch.Limits

        public init(
            rootCertificates: [Certificate] = [AppleRootCertificate.certificate],
            onlineChecks: Bool = true,
            allowTestEnvironments: Bool = false,
            onlineCacheSeconds: Double = 15 * 60,
            chainLimits: ChainSearch.Limits = ChainSearch.Limits()
        ) {
            self.rootCertificates = rootCertificates
            self.onlineChecks = onlineChecks
            self.allowTestEnvironments = allowTestEnvironments
            self.onlineCacheSeconds = onlineCacheSeconds
            self.chainLimits = chainLimits
        }
    }

    /// Signed data that passed: its payload (JSON) and what the verifier read from it.
    public struct Verified: Sendable {
        public var payload: [UInt8]
        /// The payload's `signedDate` (milliseconds since 1970), if it has one.
        public var signedDateMs: Int64?
        /// The payload's environment (`environment`, or `data.environment` in a notification).
        public var environment: String?
        /// False for test-environment data accepted without a signature (`allowTestEnvironments`).
        public var isSigned: Bool
    }

    /// The signedDates (milliseconds) data can be verified at offline: 1970-01-01 to 9999-12-31.
    static let signedDates: ClosedRange<Int64> = 0...253_402_300_799_999

    /// The environments whose data no App Store key signs.
    public static let testEnvironments: Set<String> = ["Xcode", "LocalTesting"]

    public let configuration: Configuration
    let ocsp: OCSPClient?
    let chains: ChainCache

    /// The OIDs Apple's certificates carry.
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// How many validated chains are kept by default (Apple signs with few; each entry is a key and two dates).
    public static let cachedChains = 64

    /// `ocsp` answers OCSP requests over the network; required when `configuration.onlineChecks` is on (without it
    /// every chain fails, retryably: online checks are never skipped).
    public init(
        configuration: Configuration, ocsp: OCSPClient? = nil, cachedChains: Int = SignedDataVerifier.cachedChains
    ) {
        self.configuration = configuration
        self.ocsp = ocsp
        chains = ChainCache(capacity: cachedChains)
    }

    /// Verifies `text`, a JWS in compact form, at `now` (online) or at its signedDate (offline).
    public func verify(_ text: String, now: Date = Date()) throws(SignedDataError) -> Verified {
        let jws = try CompactJWS(text)
        let facts = try PayloadFacts(jws.payload)
        if let environment = try testEnvironment(of: facts) {
            return Verified(payload: jws.payload, signedDateMs: facts.signedDateMs, environment: environment, isSigned: false)
        }
        let validationTime: Date
        if configuration.onlineChecks {
            validationTime = now
        } else if let signedDateMs = facts.signedDateMs {
            // Certificates' times run from year 1 to 9999 (GeneralizedTime): beyond, swift-certificates traps.
            guard Self.signedDates.contains(signedDateMs) else {
                throw SignedDataError(.malformed, "signedDate \(signedDateMs) is not a time between 1970 and 9999")
            }
            validationTime = Date(timeIntervalSince1970: Double(signedDateMs) / 1000)
        } else {
            throw SignedDataError(.malformed, "the payload has no signedDate to verify it at")
        }
        try checkSignature(jws, validationTime: validationTime, now: now)
        return Verified(
            payload: jws.payload, signedDateMs: facts.signedDateMs, environment: facts.environment, isSigned: true
        )
    }

    /// The test environment data is accepted for without a signature, or nil when it must be verified. A payload
    /// that names two different environments is refused either way.
    func testEnvironment(of facts: PayloadFacts) throws(SignedDataError) -> String? {
        let named = facts.environments
        guard let first = named.first else { return nil }
        if let other = named.first(where: { $0 != first }) {
            throw SignedDataError(.malformed, "the payload names two environments, \(first) and \(other)")
        }
        guard Self.testEnvironments.contains(first) else { return nil }
        guard configuration.allowTestEnvironments else {
            throw SignedDataError(
                .testEnvironment,
                "data for the \(first) environment, which the App Store does not sign (accepted only with "
                    + "APPSTORE_ALLOW_TEST_ENVIRONMENTS=on, for development)"
            )
        }
        return first
    }

    /// The ES256 signature with the leaf's key, first; then the leaf's chain, from the cache when it was validated
    /// before for this validation time (and, online, recently enough), else validated now.
    private func checkSignature(_ jws: CompactJWS, validationTime: Date, now: Date) throws(SignedDataError) {
        let (leafDER, intermediateDER) = try Self.certificates(of: jws.header())
        guard jws.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature)
        else {
            throw SignedDataError(.badSignature, "the ES256 signature is not 64 bytes (r and s)")
        }
        let key = ChainCache.Key(leaf: leafDER, intermediate: intermediateDER)
        let usable = { (chain: VerifiedChain) in self.usable(chain, validationTime: validationTime, now: now) }
        if let chain = chains.cached(key, usable: usable) {
            guard chain.publicKey.isValidSignature(signature, for: jws.signingInput) else {
                throw Self.badSignature
            }
            return
        }
        let leaf: Certificate
        do {
            leaf = try Certificate(derEncoded: leafDER)
        } catch {
            throw SignedDataError(.malformed, "the leaf certificate in x5c does not parse: \(error)")
        }
        guard let publicKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw SignedDataError(.untrustedChain, "the leaf certificate's key is not a P-256 key")
        }
        guard publicKey.isValidSignature(signature, for: jws.signingInput) else { throw Self.badSignature }
        try chain(key, leaf: leaf, publicKey: publicKey, intermediateDER: intermediateDER, validationTime: validationTime, now: now)
    }

    static let badSignature = SignedDataError(.badSignature, "the ES256 signature does not match the leaf certificate's key")

    /// True when `chain` was validated for `validationTime` and, online, checked within `onlineCacheSeconds`.
    func usable(_ chain: VerifiedChain, validationTime: Date, now: Date) -> Bool {
        guard chain.covers(validationTime) else { return false }
        guard configuration.onlineChecks else { return true }
        guard let checked = chain.checkedOnlineAt else { return false }
        return now.timeIntervalSince(checked) < configuration.onlineCacheSeconds
    }

    /// The leaf and intermediate of a header that is Apple's shape: ES256, x5c of leaf, intermediate and root.
    static func certificates(of header: CompactJWS.Header) throws(SignedDataError) -> ([UInt8], [UInt8]) {
        guard header.alg == "ES256" else {
            throw SignedDataError(.unsupportedHeader, "alg is \(header.alg ?? "missing"), not ES256")
        }
        guard let x5c = header.x5c else {
            throw SignedDataError(.unsupportedHeader, "the header has no x5c certificate chain")
        }
        guard x5c.count == 3 else {
            throw SignedDataError(
                .unsupportedHeader, "x5c holds \(x5c.count) certificates; Apple sends leaf, intermediate and root"
            )
        }
        guard let leafDER = Data(base64Encoded: x5c[0]), let intermediateDER = Data(base64Encoded: x5c[1]) else {
            throw SignedDataError(.malformed, "an x5c certificate is not base64")
        }
        return (Array(leafDER), Array(intermediateDER))
    }
}

/// What a validated chain leaves: the leaf's key and the period in which all three certificates are valid.
struct VerifiedChain: Sendable {
    var publicKey: P256.Signing.PublicKey
    var validFrom: Date
    var validUntil: Date
    /// When OCSP last said the chain was good (online checks only).
    var checkedOnlineAt: Date?

    func covers(_ time: Date) -> Bool { time >= validFrom && time <= validUntil }
}
