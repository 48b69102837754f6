import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate chain shaped like the App Store's (root, intermediate with Apple's WWDR OID, leaf with Apple's
/// receipt-signing OID, all P-256), generated on the spot with fresh keys. The fake App Store signs with one; tests
/// make variants of it (another root, a missing OID, an expired leaf, an OCSP responder's address) to prove the
/// verifier refuses them. Nothing here is trusted by receipt-worker unless its root is configured as an extra root.
public struct SigningChain: Sendable {
    /// What to change from Apple's shape.
    public struct Options: Sendable {
        public var intermediateOID = true
        public var leafOID = true
        /// The leaf's validity; the intermediate and root span a wider period around it.
        public var leafValidFrom = Date(timeIntervalSinceNow: -86_400)
        public var leafValidUntil = Date(timeIntervalSinceNow: 365 * 86_400)
        /// The OCSP responder that answers for the leaf (its issuer, the intermediate, signs the answers), written
        /// into the leaf's Authority Information Access.
        public var leafOCSPURL: String?
        /// The OCSP responder that answers for the intermediate (signed by the root), in its Authority Information
        /// Access.
        public var intermediateOCSPURL: String?
        public var name = "receipt-worker fake App Store"

        public init() {}
    }

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let rootKey: P256.Signing.PrivateKey
    public let intermediateKey: P256.Signing.PrivateKey
    public let leafKey: P256.Signing.PrivateKey

    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    public init(_ options: Options = Options()) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        let rootName = try DistinguishedName { CommonName("\(options.name) Root CA") }
        let intermediateName = try DistinguishedName { CommonName("\(options.name) Intermediate CA") }
        let leafName = try DistinguishedName { CommonName("\(options.name) Receipt Signing") }
        let caFrom = options.leafValidFrom.addingTimeInterval(-365 * 86_400)
        let caUntil = max(options.leafValidUntil, Date()).addingTimeInterval(10 * 365 * 86_400)
        let marker: ArraySlice<UInt8> = [0x05, 0x00]  // ASN.1 NULL, as in Apple's certificates

        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: caFrom, notValidAfter: caUntil, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey)
        )
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: .init(rootKey.publicKey)).keyIdentifier)
        }
        if options.intermediateOID {
            try intermediateExtensions.append(.init(oid: Self.intermediateOID, critical: false, value: marker))
        }
        if let url = options.intermediateOCSPURL {
            try intermediateExtensions.append(Self.ocsp(url).makeCertificateExtension())
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: caFrom, notValidAfter: caUntil, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: intermediateExtensions,
            issuerPrivateKey: .init(rootKey)
        )
        var leafExtensions = try Certificate.Extensions {
            BasicConstraints.notCertificateAuthority
            Critical(KeyUsage(digitalSignature: true))
        }
        if options.leafOID {
            try leafExtensions.append(.init(oid: Self.leafOID, critical: false, value: marker))
        }
        if let url = options.leafOCSPURL {
            try leafExtensions.append(Self.ocsp(url).makeCertificateExtension())
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: options.leafValidFrom, notValidAfter: options.leafValidUntil,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey)
        )
    }

    private static func ocsp(_ url: String) -> AuthorityInformationAccess {
        AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))])
    }

    /// The root as DER, for a file `APPSTORE_ROOT_CERTIFICATES` names.
    public func rootDER() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        return serializer.serializedBytes
    }
}
