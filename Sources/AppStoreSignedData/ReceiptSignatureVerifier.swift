import AppReceipt
import Crypto
import Foundation
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies an app receipt's PKCS#7 (CMS SignedData) signature as Apple documents for receipts ("Validating receipts
/// on the device"), before anything read from it is trusted:
/// - the one signer's certificate is found in the receipt by issuer and serial number;
/// - the algorithms are RSA PKCS#1 v1.5 with SHA-1 or SHA-256 (Apple's, old and new; nothing else is accepted);
/// - with signed attributes, their message digest equals the content's digest and the signature covers their DER;
///   without (Apple's receipts have none), the signature covers the content itself;
/// - the signer chains under RFC 5280 through an intermediate from the receipt to a pinned root (Apple Inc.'s Apple
///   Root CA unless tests add theirs; the root the receipt carries is never trusted as such), the intermediate with
///   Apple's WWDR OID 1.2.840.113635.100.6.2.1 and the signer with the receipt-signing OID 1.2.840.113635.100.6.11.1,
///   whose key usage (when present) allows digital signatures;
/// - at the receipt's creation date (attribute 12, inside the signed content; now if that is later than now),
///   offline: receipts are kept and sent long after they were signed, and their signing certificates expire.
/// The chain search is bounded whatever the receipt carries (`ChainSearch`): more than four certificates, or two with
/// one subject, are refused unread, and only the path from the signer through its issuers by name is searched.
/// The chain itself is built once per certificate set (cached, only once it validated, with the period its three
/// certificates are all valid), so a receipt costs one RSA check. Xcode's StoreKit-testing receipts, signed by a
/// self-signed "StoreKit" certificate, never verify: the App Store Server API cannot look their transactions up anyway.
public final class ReceiptSignatureVerifier: Sendable {
    /// The roots a receipt's chain may end in.
    public let rootCertificates: [Certificate]
    /// What a receipt's chain search may cost (`ChainSearch`).
    public let chainLimits: ChainSearch.Limits
    private let chains = Mutex<[[UInt8]: ValidityWindow]>([:])
    static let cachedChains = 64

    /// `rootCertificates`: Apple Root CA (`AppleIncRootCertificate`) in production; tests give their own.
    public init(
        rootCertificates: [Certificate] = [AppleIncRootCertificate.certificate],
        chainLimits: ChainSearch.Limits = ChainSearch.Limits()
    ) {
        self.rootCertificates = rootCertificates
        self.chainLimits = chainLimits
    }

    /// The receipt, read from the signed content once the signature, digest and chain checked out.
    public func verifiedReceipt(base64: String, now: Date = Date()) throws(ReceiptSignatureError) -> AppReceipt {
        guard let bytes = Base64Text.decode(base64) else {
            throw ReceiptSignatureError(.malformed, "the receipt is not base64")
        }
        return try verifiedReceipt(pkcs7: bytes, now: now)
    }

    /// The same, from the PKCS#7 bytes.
    public func verifiedReceipt(pkcs7 bytes: [UInt8], now: Date = Date()) throws(ReceiptSignatureError) -> AppReceipt {
        let signed = try ReceiptSignedData(pkcs7: bytes, maximumCertificates: chainLimits.maximumCertificates)
        let signer = try signerCertificate(of: signed)
        try checkSignature(of: signed, by: signer)

        let receipt: AppReceipt
        do {
            receipt = try AppReceipt.decode(signedContent: signed.content)
        } catch {
            throw ReceiptSignatureError(.badPayload, "the signed content is not a receipt: \(error.message)")
        }
        guard let creationMs = receipt.creationDate else {
            throw ReceiptSignatureError(.badPayload, "the receipt has no creation date to check its certificates at")
        }
        let created = Date(timeIntervalSince1970: Double(creationMs) / 1000)
        try checkChain(signer: signer, certificates: signed.certificates, at: min(created, now))
        return receipt
    }

    /// The certificate the signer info names (issuer and serial number), from the receipt's own set.
    private func signerCertificate(of signed: ReceiptSignedData) throws(ReceiptSignatureError) -> Certificate {
        let named = signed.certificates.filter {
            $0.issuer == signed.signer.issuer && $0.serialNumber == signed.signer.serialNumber
        }
        guard named.count == 1 else {
            throw ReceiptSignatureError(
                .signerNotFound,
                named.isEmpty
                    ? "the receipt does not carry the certificate its signer names"
                    : "the receipt carries \(named.count) certificates with the signer's issuer and serial number"
            )
        }
        return named[0]
    }

    /// Digest and signature: RFC 5652 § 5.4 and § 5.6.
    private func checkSignature(of signed: ReceiptSignedData, by certificate: Certificate) throws(ReceiptSignatureError) {
        let signer = signed.signer
        guard signed.digestAlgorithms.contains(signer.digestAlgorithm) else {
            throw ReceiptSignatureError(.malformed, "the signer's digest algorithm is not among the SignedData's")
        }
        let algorithm = try Self.signatureAlgorithm(digest: signer.digestAlgorithm, signature: signer.signatureAlgorithm)
        let signedBytes: [UInt8]
        if let attributes = signer.signedAttributes {
            let expected = try ReceiptSignedData.messageDigest(inSignedAttributes: attributes)
            let actual: [UInt8] =
                algorithm == .sha1WithRSAEncryption
                ? Array(Insecure.SHA1.hash(data: signed.content)) : Array(SHA256.hash(data: signed.content))
            guard expected.elementsEqual(actual) else {
                throw ReceiptSignatureError(.digestMismatch, "the signed message digest does not match the content")
            }
            signedBytes = attributes
        } else {
            signedBytes = Array(signed.content)
        }
        guard certificate.publicKey.isValidSignature(signer.signature, for: signedBytes, signatureAlgorithm: algorithm)
        else {
            throw ReceiptSignatureError(.badSignature, "the signature does not match the signer certificate's key")
        }
    }

    /// RSA PKCS#1 v1.5 with the signer's digest: `rsaEncryption` (as Apple writes it) or the combined OID.
    static func signatureAlgorithm(
        digest: ASN1ObjectIdentifier, signature: ASN1ObjectIdentifier
    ) throws(ReceiptSignatureError) -> Certificate.SignatureAlgorithm {
        typealias OID = ReceiptSignedData.OID
        switch (digest, signature) {
        case (OID.sha1, OID.rsaEncryption), (OID.sha1, OID.sha1WithRSAEncryption):
            return .sha1WithRSAEncryption
        case (OID.sha256, OID.rsaEncryption), (OID.sha256, OID.sha256WithRSAEncryption):
            return .sha256WithRSAEncryption
        default:
            throw ReceiptSignatureError(
                .unsupportedAlgorithm,
                "digest \(digest) with signature \(signature) is not RSA PKCS#1 v1.5 with SHA-1 or SHA-256"
            )
        }
    }

    /// RFC 5280 path validation from the signer to a pinned root at `time`, with Apple's marks; cached per set of
    /// certificates once it passed.
    private func checkChain(
        signer: Certificate, certificates: [Certificate], at time: Date
    ) throws(ReceiptSignatureError) {
        var key = DER.Serializer()
        do {
            try key.serialize(signer)
            for certificate in certificates { try key.serialize(certificate) }
        } catch {
            throw ReceiptSignatureError(.malformed, "a certificate does not serialize: \(error)")
        }
        let cacheKey = Array(SHA256.hash(data: key.serializedBytes))
        if let window = chains.withLock({ $0[cacheKey] }) {
            guard window.covers(time) else {
                throw ReceiptSignatureError(
                    .untrustedChain,
                    "the signing certificates were not all valid at the receipt's creation date (\(time))"
                )
            }
            return
        }
        let path: [Certificate]
        do {
            path = try ChainSearch.path(from: signer, through: certificates, limits: chainLimits)
        } catch {
            throw ReceiptSignatureError(.untrustedChain, "the receipt's certificates are refused: \(error)")
        }
        let roots = rootCertificates
        let outcome = ChainSearch.validate(intermediates: path, limits: chainLimits) { intermediates in
            var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy(fixedExpiryValidationTime: time)
                AppStoreOIDPolicy()
                ReceiptSignerPolicy()
            }
            return await verifier.validate(leaf: signer, intermediates: intermediates)
        }
        switch outcome {
        case .valid(let chain):
            let window = ValidityWindow(
                from: chain.map(\.notValidBefore).max() ?? time, until: chain.map(\.notValidAfter).min() ?? time
            )
            chains.withLock { cache in
                // Only chains to a pinned root get here: a handful of Apple signing certificates, so the bound is
                // never reached in practice and clearing is enough.
                if cache.count >= Self.cachedChains { cache.removeAll(keepingCapacity: true) }
                cache[cacheKey] = window
            }
        case .invalid(let failures):
            let reasons = failures.map { String(describing: $0.policyFailureReason) }
            let detail = reasons.isEmpty ? "no path to a trusted root" : reasons.joined(separator: "; ")
            throw ReceiptSignatureError(
                .untrustedChain, "the receipt's signer does not chain to Apple's root at \(time): \(detail)"
            )
        case .cutShort(let spent):
            throw ReceiptSignatureError(.untrustedChain, "the receipt's chain was not found: \(spent)")
        }
    }
}

/// The period in which every certificate of a validated chain is valid.
struct ValidityWindow: Sendable {
    var from: Date
    var until: Date

    func covers(_ time: Date) -> Bool { time >= from && time <= until }
}

/// The receipt signer's own certificate: not a CA, and allowed to sign (key usage digitalSignature, when it has a key
/// usage extension).
struct ReceiptSignerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        let leaf = chain.leaf
        do {
            if let usage = try leaf.extensions.keyUsage, !usage.digitalSignature {
                return .failsToMeetPolicy(reason: "the receipt signer's key usage does not allow signatures")
            }
            if case .isCertificateAuthority = try leaf.extensions.basicConstraints {
                return .failsToMeetPolicy(reason: "the receipt signer is a certificate authority")
            }
        } catch {
            return .failsToMeetPolicy(reason: "the receipt signer's extensions do not parse: \(error)")
        }
        return .meetsPolicy
    }
}
