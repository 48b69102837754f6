import Crypto
import Foundation
import X509
import _CryptoExtras

/// An attacker's certificate set that makes a naive chain search explode: `size` P-256 CAs that share one subject
/// (`CN=Loop CA`), each cross-signed by every other (size · (size − 1) certificates), and an RSA receipt signer issued
/// by the first. A path search that tries every simple path through such a set is factorial in `size` (7: seconds,
/// 9: hours), though 9 makes a receipt of about 25 KB. Tests sign receipts with it (its own key signs the content,
/// so the signature check passes and the chain search is reached) to prove the search is bounded.
public struct CrossSignedLoop: Sendable {
    /// The loop's certificates.
    public let certificates: [Certificate]
    /// The RSA signer, issued by the first CA of the loop, and its key.
    public let signer: Certificate
    public let signerKey: _RSA.Signing.PrivateKey

    public static let subject = "Loop CA"

    public init(size: Int) throws {
        let name = try DistinguishedName { CommonName(Self.subject) }
        let keys = (0..<max(size, 1)).map { _ in P256.Signing.PrivateKey() }
        let from = Date(timeIntervalSinceNow: -10 * 86_400)
        let until = Date(timeIntervalSinceNow: 365 * 86_400)
        var certificates: [Certificate] = []
        for (subject, subjectKey) in keys.enumerated() {
            for (issuer, issuerKey) in keys.enumerated() where issuer != subject {
                certificates.append(
                    try Certificate(
                        version: .v3, serialNumber: .init(), publicKey: .init(subjectKey.publicKey),
                        notValidBefore: from, notValidAfter: until, issuer: name, subject: name,
                        signatureAlgorithm: .ecdsaWithSHA256,
                        extensions: try Certificate.Extensions {
                            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                            Critical(KeyUsage(keyCertSign: true))
                        },
                        issuerPrivateKey: .init(issuerKey)
                    )
                )
            }
        }
        self.certificates = certificates
        signerKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        signer = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(signerKey.publicKey),
            notValidBefore: from, notValidAfter: until, issuer: name,
            subject: try DistinguishedName { CommonName("Mac App Store and iTunes Store Receipt Signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            },
            issuerPrivateKey: .init(keys[0])
        )
    }

    /// Signs receipts with the signer's key, carrying the signer and the whole loop.
    public var receiptSigner: ReceiptSigner {
        var signer = ReceiptSigner(
            chain: ReceiptSigningChain(root: self.signer, intermediate: self.signer, leaf: self.signer, leafKey: signerKey)
        )
        signer.options.certificates = [self.signer] + certificates
        return signer
    }
}
