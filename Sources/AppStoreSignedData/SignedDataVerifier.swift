import Crypto
import SwiftASN1
import Dispatch
import Foundation
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies data the App Store signed (StoreKit 2 transactions, renewal info, server notifications) the way Apple's
/// own libraries do: the header's `alg` is ES256 and its `x5c` holds leaf, intermediate and root; the leaf and
/// intermediate chain to a trusted root (the embedded Apple Root CA - G3, plus roots added for tests) under RFC 5280,
/// the intermediate carries OID 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1; then the ES256
/// signature with the leaf's key. The root in `x5c` itself is never trusted.
///
/// Validation time: with online checks, now, plus OCSP for the leaf and intermediate (a responder that cannot be
/// reached is a retryable failure, a revoked certificate a rejection); without, the payload's `signedDate`, which is
/// how data can be verified offline long after it was signed.
///
/// A chain that passed is cached by its two certificates (with online checks for 15 minutes, as Apple's libraries
/// do), so most calls cost one signature check. Safe to share between threads: the cache is behind a lock.
public final class SignedDataVerifier: Sendable {
    public struct Configuration: Sendable {
        /// The roots a chain may end in. Apple Root CA - G3 unless tests or the fake App Store add their own.
        public var rootCertificates: [Certificate]
        /// Validate at the current time with OCSP (`true`), or at the payload's signedDate without it.
        public var onlineChecks: Bool
        /// Accept data signed by Xcode or for StoreKit local testing (environment `Xcode` or `LocalTesting`),
        /// which no App Store key signed. Never in production.
        public var allowTestEnvironments: Bool
        /// How long an online check of a chain stands before it is made again.
        public var onlineCacheSeconds: Double

        public init(
            rootCertificates: [Certificate] = [AppleRootCertificate.certificate],
            onlineChecks: Bool = true,
            allowTestEnvironments: Bool = false,
            onlineCacheSeconds: Double = 15 * 60
        ) {
            self.rootCertificates = rootCertificates
            self.onlineChecks = onlineChecks
            self.allowTestEnvironments = allowTestEnvironments
            self.onlineCacheSeconds = onlineCacheSeconds
        }
    }

    /// Signed data that passed: its payload (JSON) and what the verifier read from it.
    public struct Verified: Sendable {
        public var payload: [UInt8]
        /// The payload's `signedDate` (milliseconds since 1970), if it has one.
        public var signedDateMs: Int64?
        /// The payload's environment (`environment`, or `data.environment` in a notification).
        public var environment: String?
    }

    public let configuration: Configuration
    private let ocsp: OCSPClient?
    private let chains = Mutex<[String: VerifiedChain]>([:])
    /// Held while a chain is validated: callers that miss the cache together wait for the first one's result
    /// instead of validating the same chain side by side.
    private let validating = Mutex(())

    /// The OIDs Apple's certificates carry.
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let cachedChains = 64

    /// `ocsp` answers OCSP requests over the network; required when `configuration.onlineChecks` is on.
    public init(configuration: Configuration, ocsp: OCSPClient? = nil) {
        self.configuration = configuration
        self.ocsp = ocsp
    }

    /// Verifies `text`, a JWS in compact form, at `now` (online) or at its signedDate (offline).
    public func verify(_ text: String, now: Date = Date()) throws(SignedDataError) -> Verified {
        let jws = try CompactJWS(text)
        let facts = try PayloadFacts(jws.payload)
        let verified = Verified(payload: jws.payload, signedDateMs: facts.signedDateMs, environment: facts.environment)
        if let environment = facts.environment, ["Xcode", "LocalTesting"].contains(environment) {
            guard configuration.allowTestEnvironments else {
                throw SignedDataError(
                    .testEnvironment,
                    "signed for the \(environment) environment, not by the App Store (allowed only for development)"
                )
            }
            return verified
        }
        let validationTime: Date
        if configuration.onlineChecks {
            validationTime = now
        } else if let signedDateMs = facts.signedDateMs {
            validationTime = Date(timeIntervalSince1970: Double(signedDateMs) / 1000)
        } else {
            throw SignedDataError(.malformed, "the payload has no signedDate to verify it at")
        }
        let key = try publicKey(jws, validationTime: validationTime, now: now)
        guard jws.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
            key.isValidSignature(signature, for: jws.signingInput)
        else {
            throw SignedDataError(.badSignature, "the ES256 signature does not match the leaf certificate's key")
        }
        return verified
    }

    /// The leaf's key once its chain has been validated at `validationTime`, from the cache when it can be.
    /// The chain is cached by the header as sent, so a hit costs neither decoding the header nor its certificates.
    private func publicKey(
        _ jws: CompactJWS, validationTime: Date, now: Date
    ) throws(SignedDataError) -> P256.Signing.PublicKey {
        let key = jws.encodedHeader
        if let cached = cachedKey(key, validationTime: validationTime, now: now) { return cached }
        let (leafDER, intermediateDER) = try Self.certificates(of: jws.header())
        return try validating.withLock { _ throws(SignedDataError) -> P256.Signing.PublicKey in
            if let cached = cachedKey(key, validationTime: validationTime, now: now) { return cached }
            return try validateAndCache(
                key, leafDER: leafDER, intermediateDER: intermediateDER, validationTime: validationTime, now: now
            )
        }
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

    /// The key of a chain validated before for this validation time (and, online, checked recently enough).
    private func cachedKey(_ key: String, validationTime: Date, now: Date) -> P256.Signing.PublicKey? {
        guard let cached = chains.withLock({ $0[key] }), cached.covers(validationTime) else { return nil }
        if configuration.onlineChecks {
            guard let checked = cached.checkedOnlineAt, now.timeIntervalSince(checked) < configuration.onlineCacheSeconds
            else { return nil }
        }
        return cached.publicKey
    }

    private func validateAndCache(
        _ key: String, leafDER: [UInt8], intermediateDER: [UInt8], validationTime: Date, now: Date
    ) throws(SignedDataError) -> P256.Signing.PublicKey {
        let online = configuration.onlineChecks
        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: leafDER)
            intermediate = try Certificate(derEncoded: intermediateDER)
        } catch {
            throw SignedDataError(.malformed, "an x5c certificate does not parse: \(error)")
        }
        let chain = try validate(leaf: leaf, intermediate: intermediate, validationTime: validationTime, now: now)
        guard let publicKey = P256.Signing.PublicKey(chain.leaf.publicKey) else {
            throw SignedDataError(.untrustedChain, "the leaf certificate's key is not a P-256 key")
        }
        let entry = VerifiedChain(
            publicKey: publicKey,
            validFrom: chain.map(\.notValidBefore).max() ?? validationTime,
            validUntil: chain.map(\.notValidAfter).min() ?? validationTime,
            checkedOnlineAt: online ? now : nil
        )
        chains.withLock { cache in
            if cache.count >= Self.cachedChains { cache.removeAll(keepingCapacity: true) }
            cache[key] = entry
        }
        return publicKey
    }

    /// RFC 5280 path validation to a configured root, Apple's OIDs, and with online checks OCSP: swift-certificates'
    /// verifier, which is asynchronous, run to completion from this synchronous caller.
    private func validate(
        leaf: Certificate, intermediate: Certificate, validationTime: Date, now: Date
    ) throws(SignedDataError) -> ValidatedCertificateChain {
        let roots = configuration.rootCertificates
        let requester = configuration.onlineChecks ? ocsp : nil
        if configuration.onlineChecks && requester == nil {
            throw SignedDataError(.revocationUnavailable, "online checks are on but no OCSP client was given")
        }
        let result = BlockingAsync.run { () -> CertificateValidationResult in
            var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy(fixedExpiryValidationTime: validationTime)
                AppStoreOIDPolicy()
                if let requester {
                    OCSPVerifierPolicy(failureMode: .hard, requester: requester, fixedExpiryValidationTime: now)
                }
            }
            return await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        }
        switch result {
        case .validCertificate(let chain):
            return chain
        case .couldNotValidate(let failures):
            let reasons = failures.map { String(describing: $0.policyFailureReason) }
            if !reasons.isEmpty, reasons.allSatisfy({ $0.contains(OCSPClient.unreachableMarker) }) {
                throw SignedDataError(
                    .revocationUnavailable, "the OCSP responder could not be asked: \(reasons.joined(separator: "; "))"
                )
            }
            let detail = reasons.isEmpty ? "no path to a trusted root" : reasons.joined(separator: "; ")
            throw SignedDataError(.untrustedChain, "the certificate chain is not trusted: \(detail)")
        }
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
