import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A certificate chain shaped like the one that signs App Store app receipts (Apple Root CA → Apple Worldwide
/// Developer Relations CA with OID 1.2.840.113635.100.6.2.1 → "Mac App Store and iTunes Store Receipt Signing" with
/// OID 1.2.840.113635.100.6.11.1; all RSA 2048), generated on the spot with fresh keys. The fake App Store signs the
/// receipts it makes with one; receipt-worker trusts it only where a test adds its root.
public struct ReceiptSigningChain: Sendable {
    /// What to change from Apple's shape.
    public struct Options: Sendable {
        public var intermediateOID = true
        public var leafOID = true
        /// A signer that is itself a certificate authority (basic constraints cA), which a receipt signer never is.
        public var leafIsCertificateAuthority = false
        /// The signer's key usage allows digital signatures (false: only key encipherment).
        public var leafSigns = true
        /// Names copied from Apple's, so a test can show that names alone earn no trust.
        public var rootName = "Apple Root CA"
        public var intermediateName = "Apple Worldwide Developer Relations Certification Authority"
        public var leafName = "Mac App Store and iTunes Store Receipt Signing"
        public var leafValidFrom = Date(timeIntervalSinceNow: -86_400)
        public var leafValidUntil = Date(timeIntervalSinceNow: 365 * 86_400)

        public init() {}
    }

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: _RSA.Signing.PrivateKey

    /// A chain from parts made elsewhere (attack tests: a signer issued by an attacker's CA).
    public init(root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: _RSA.Signing.PrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }

    public init(_ options: Options = Options()) throws {
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.leafKey = leafKey
        let rootName = try Self.name(options.rootName, unit: "Apple Certification Authority")
        let intermediateName = try Self.name(options.intermediateName, unit: "Apple Worldwide Developer Relations")
        let leafName = try Self.name(options.leafName, unit: "Apple Worldwide Developer Relations")
        let caFrom = options.leafValidFrom.addingTimeInterval(-365 * 86_400)
        let caUntil = max(options.leafValidUntil, Date()).addingTimeInterval(10 * 365 * 86_400)
        let marker: ArraySlice<UInt8> = [0x05, 0x00]  // ASN.1 NULL, as in Apple's certificates

        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: caFrom, notValidAfter: caUntil, issuer: rootName, subject: rootName,
            signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey)
        )
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        if options.intermediateOID {
            try intermediateExtensions.append(.init(oid: SigningChain.intermediateOID, critical: false, value: marker))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: caFrom, notValidAfter: caUntil, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .sha256WithRSAEncryption, extensions: intermediateExtensions,
            issuerPrivateKey: .init(rootKey)
        )
        var leafExtensions = try Certificate.Extensions {
            Critical(
                options.leafIsCertificateAuthority
                    ? BasicConstraints.isCertificateAuthority(maxPathLength: nil) : BasicConstraints.notCertificateAuthority
            )
            Critical(options.leafSigns ? KeyUsage(digitalSignature: true) : KeyUsage(keyEncipherment: true))
        }
        if options.leafOID {
            try leafExtensions.append(.init(oid: SigningChain.leafOID, critical: false, value: marker))
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: options.leafValidFrom, notValidAfter: options.leafValidUntil,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey)
        )
    }

    private static func name(_ commonName: String, unit: String) throws -> DistinguishedName {
        try DistinguishedName {
            CountryName("US")
            OrganizationName("Apple Inc.")
            OrganizationalUnitName(unit)
            CommonName(commonName)
        }
    }
}
