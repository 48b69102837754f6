import Crypto
import Foundation
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A certificate authority made on the spot and a server certificate it issued for some names, all P-256: what the
/// fake App Store serves TLS with. Nothing trusts the authority unless told to (a client's CA file).
public struct ServerCertificates: Sendable {
    /// The authority's certificate, to trust.
    public let authority: Certificate
    /// The server's certificate, issued by `authority`.
    public let server: Certificate
    /// The server certificate's private key.
    public let serverKey: P256.Signing.PrivateKey

    /// Makes an authority and a server certificate for `names`: host names (`localhost`) or IPv4/IPv6 addresses
    /// (`127.0.0.1`, `::1`), valid from an hour ago for `days` days.
    public init(names: [String], days: Int = 30) throws {
        guard let first = names.first else {
            throw FakeAppStoreError(.invalidConfiguration, "a TLS certificate needs at least one host name or address")
        }
        let authorityKey = P256.Signing.PrivateKey()
        let serverKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("receipt-worker fake App Store TLS CA") }
        let serverName = try DistinguishedName { CommonName(first) }
        let from = Date(timeIntervalSinceNow: -3_600)
        let until = Date(timeIntervalSinceNow: Double(days) * 86_400)
        let authorityKeyID = SubjectKeyIdentifier(hash: .init(authorityKey.publicKey))
        authority = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(authorityKey.publicKey),
            notValidBefore: from, notValidAfter: until, issuer: authorityName, subject: authorityName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                authorityKeyID
            },
            issuerPrivateKey: .init(authorityKey)
        )
        let alternativeNames = SubjectAlternativeNames(names.map(Self.generalName))
        server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(serverKey.publicKey),
            notValidBefore: from, notValidAfter: until, issuer: authorityName, subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                BasicConstraints.notCertificateAuthority
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                alternativeNames
                AuthorityKeyIdentifier(keyIdentifier: authorityKeyID.keyIdentifier)
            },
            issuerPrivateKey: .init(authorityKey)
        )
        self.serverKey = serverKey
    }

    /// The authority's certificate as PEM, for a client's CA file.
    public func authorityPEM() throws -> String {
        try authority.serializeAsPEM().pemString
    }

    /// The server's certificate as DER.
    func serverDER() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(server)
        return serializer.serializedBytes
    }

    /// An IP address entry for an address, a DNS name entry for anything else.
    private static func generalName(_ name: String) -> GeneralName {
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return .ipAddress(ASN1OctetString(contentBytes: withUnsafeBytes(of: &v4) { ArraySlice($0) }))
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            return .ipAddress(ASN1OctetString(contentBytes: withUnsafeBytes(of: &v6) { ArraySlice($0) }))
        }
        return .dnsName(name)
    }
}
