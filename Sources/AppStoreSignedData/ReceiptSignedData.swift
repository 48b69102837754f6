import SwiftASN1
import X509

/// The parts of an app receipt's PKCS#7 (CMS, RFC 5652) SignedData that its signature check needs, read with
/// swift-asn1 (BER, as the container may be; DER where a signature covers the encoding). Nothing here is trusted yet.
///
///     ContentInfo ::= SEQUENCE { contentType OID (signedData), content [0] EXPLICIT SignedData }
///     SignedData ::= SEQUENCE { version INTEGER, digestAlgorithms SET OF AlgorithmIdentifier,
///         encapContentInfo SEQUENCE { eContentType OID (data), eContent [0] EXPLICIT OCTET STRING },
///         certificates [0] IMPLICIT SET OF Certificate OPTIONAL, crls [1] IMPLICIT OPTIONAL, signerInfos SET OF SignerInfo }
///     SignerInfo ::= SEQUENCE { version INTEGER (1), sid IssuerAndSerialNumber, digestAlgorithm AlgorithmIdentifier,
///         signedAttrs [0] IMPLICIT SET OF Attribute OPTIONAL, signatureAlgorithm AlgorithmIdentifier,
///         signature OCTET STRING, unsignedAttrs [1] IMPLICIT OPTIONAL }
struct ReceiptSignedData {
    /// The digest algorithms SignedData lists.
    var digestAlgorithms: [ASN1ObjectIdentifier]
    /// The eContent's octets: the receipt payload the signature covers.
    var content: ArraySlice<UInt8>
    /// The certificates the message carries, in its order (untrusted: the chain is built from them to a pinned root).
    var certificates: [Certificate]
    /// The one signer.
    var signer: Signer

    struct Signer {
        var issuer: DistinguishedName
        var serialNumber: Certificate.SerialNumber
        var digestAlgorithm: ASN1ObjectIdentifier
        /// The signed attributes re-tagged as `SET OF` (0x31), in DER: the bytes the signature covers when present.
        var signedAttributes: [UInt8]?
        var signatureAlgorithm: ASN1ObjectIdentifier
        var signature: ArraySlice<UInt8>
    }

    enum OID {
        static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
        static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
        static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
        static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
        static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
        static let sha1WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 5]
        static let sha256WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 11]
        static let contentTypeAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
        static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
    }

    /// `maximumCertificates`: a certificate set larger than this is refused before any certificate in it is parsed.
    init(pkcs7 bytes: [UInt8], maximumCertificates: Int = ChainSearch.Limits().maximumCertificates)
        throws(ReceiptSignatureError)
    {
        let contentInfo: ASN1Node
        do {
            contentInfo = try BER.parse(bytes)
        } catch {
            throw Self.malformed("the receipt is not ASN.1 (\(error))")
        }
        let outer = try Self.fields(of: contentInfo, "ContentInfo")
        guard outer.count == 2, try Self.oid(outer[0]) == OID.signedData, outer[1].identifier == Self.explicit0 else {
            throw Self.malformed("the receipt is not a PKCS#7 SignedData")
        }
        let wrapped = try Self.fields(of: outer[1], "ContentInfo content")
        guard wrapped.count == 1 else { throw Self.malformed("the SignedData is not one value") }
        var fields = try Self.fields(of: wrapped[0], "SignedData")[...]

        guard let version = fields.popFirst(), version.identifier == .integer else {
            throw Self.malformed("the SignedData has no version")
        }
        guard let algorithms = fields.popFirst(), algorithms.identifier == .set else {
            throw Self.malformed("the SignedData has no digest algorithm set")
        }
        digestAlgorithms = try Self.fields(of: algorithms, "digestAlgorithms").map { node throws(ReceiptSignatureError) in
            try Self.algorithm(node)
        }
        guard let encapsulated = fields.popFirst() else { throw Self.malformed("the SignedData has no content") }
        content = try Self.encapsulatedData(encapsulated)

        var certificates: [Certificate] = []
        if let next = fields.first, next.identifier == Self.implicit0 {
            fields.removeFirst()
            let nodes = try Self.fields(of: next, "certificates")
            guard nodes.count <= maximumCertificates else {
                throw ReceiptSignatureError(
                    .untrustedChain,
                    "the receipt carries \(nodes.count) certificates, more than the \(maximumCertificates) considered "
                        + "(Apple's receipts carry three: signer, intermediate and root)"
                )
            }
            for node in nodes {
                guard node.identifier == .sequence else {
                    throw Self.malformed("the certificate set holds something other than X.509 certificates")
                }
                do {
                    certificates.append(try Certificate(derEncoded: Array(node.encodedBytes)))
                } catch {
                    throw Self.malformed("a certificate in the receipt does not parse: \(error)")
                }
            }
        }
        self.certificates = certificates
        if let next = fields.first, next.identifier == Self.implicit1 { fields.removeFirst() }
        guard let signerInfos = fields.popFirst(), signerInfos.identifier == .set, fields.isEmpty else {
            throw Self.malformed("the SignedData has no signer infos where they belong")
        }
        let signers = try Self.fields(of: signerInfos, "signerInfos")
        guard signers.count == 1 else {
            throw Self.malformed("the receipt has \(signers.count) signers, not one")
        }
        signer = try Self.signer(signers[0])
    }

    /// `SEQUENCE { eContentType (data), [0] EXPLICIT OCTET STRING }`: the octets (a constructed BER OCTET STRING's
    /// pieces joined).
    private static func encapsulatedData(_ node: ASN1Node) throws(ReceiptSignatureError) -> ArraySlice<UInt8> {
        let fields = try fields(of: node, "encapContentInfo")
        guard fields.count == 2, try oid(fields[0]) == OID.data, fields[1].identifier == explicit0 else {
            throw malformed("the signed content is not data with the receipt inside")
        }
        let wrapped = try self.fields(of: fields[1], "eContent")
        guard wrapped.count == 1, wrapped[0].identifier == .octetString else {
            throw malformed("the signed content is not an OCTET STRING")
        }
        let octets = try self.octets(wrapped[0])
        guard !octets.isEmpty else { throw malformed("the signed content is empty") }
        return octets
    }

    private static func signer(_ node: ASN1Node) throws(ReceiptSignatureError) -> Signer {
        var fields = try fields(of: node, "SignerInfo")[...]
        guard let version = fields.popFirst(), version.identifier == .integer,
            case .primitive(let versionBytes) = version.content, versionBytes.elementsEqual([1])
        else {
            throw malformed("the signer info is not version 1 (issuer and serial number)")
        }
        guard let sid = fields.popFirst(), sid.identifier == .sequence else {
            throw malformed("the signer info does not name its certificate by issuer and serial number")
        }
        let sidFields = try self.fields(of: sid, "IssuerAndSerialNumber")
        guard sidFields.count == 2, sidFields[1].identifier == .integer,
            case .primitive(let serialBytes) = sidFields[1].content, !serialBytes.isEmpty
        else {
            throw malformed("the signer's issuer and serial number do not parse")
        }
        let issuer: DistinguishedName
        do {
            issuer = try DistinguishedName(derEncoded: sidFields[0])
        } catch {
            throw malformed("the signer's issuer does not parse: \(error)")
        }
        guard let digestNode = fields.popFirst() else { throw malformed("the signer info has no digest algorithm") }
        let digestAlgorithm = try algorithm(digestNode)

        var signedAttributes: [UInt8]?
        if let next = fields.first, next.identifier == implicit0 {
            fields.removeFirst()
            signedAttributes = try derSignedAttributes(next)
        }
        guard let signatureAlgorithmNode = fields.popFirst() else {
            throw malformed("the signer info has no signature algorithm")
        }
        let signatureAlgorithm = try algorithm(signatureAlgorithmNode)
        guard let signatureNode = fields.popFirst(), signatureNode.identifier == .octetString else {
            throw malformed("the signer info has no signature")
        }
        let signature = try octets(signatureNode)
        if let next = fields.first, next.identifier == implicit1 { fields.removeFirst() }
        guard fields.isEmpty else { throw malformed("the signer info has fields after its signature") }
        return Signer(
            issuer: issuer, serialNumber: Certificate.SerialNumber(bytes: serialBytes), digestAlgorithm: digestAlgorithm,
            signedAttributes: signedAttributes, signatureAlgorithm: signatureAlgorithm, signature: signature
        )
    }

    /// The `[0] IMPLICIT` signed attributes as RFC 5652 § 5.4 has them signed: the same content under the `SET OF`
    /// tag, in DER. Attributes not already in DER are refused rather than re-encoded.
    private static func derSignedAttributes(_ node: ASN1Node) throws(ReceiptSignatureError) -> [UInt8] {
        var bytes = Array(node.encodedBytes)
        guard bytes.first == 0xA0 else { throw malformed("the signed attributes are not [0] IMPLICIT SET OF") }
        bytes[0] = 0x31
        do {
            let reparsed = try DER.parse(bytes)
            guard reparsed.encodedBytes.count == bytes.count else {
                throw malformed("the signed attributes are followed by stray bytes")
            }
        } catch let error as ReceiptSignatureError {
            throw error
        } catch {
            throw malformed("the signed attributes are not DER: \(error)")
        }
        return bytes
    }

    /// The signed attributes' content type (must be id-data) and message digest (exactly one of each, one value
    /// each), from bytes `derSignedAttributes` accepted.
    static func messageDigest(inSignedAttributes bytes: [UInt8]) throws(ReceiptSignatureError) -> ArraySlice<UInt8> {
        let set: ASN1Node
        do {
            set = try DER.parse(bytes)
        } catch {
            throw malformed("the signed attributes are not DER: \(error)")
        }
        var contentTypes: [ASN1ObjectIdentifier] = []
        var digests: [ArraySlice<UInt8>] = []
        for attribute in try fields(of: set, "signedAttrs") {
            let parts = try fields(of: attribute, "Attribute")
            guard parts.count == 2, parts[1].identifier == .set else {
                throw malformed("a signed attribute is not a type and a set of values")
            }
            let values = try fields(of: parts[1], "attribute values")
            switch try oid(parts[0]) {
            case OID.contentTypeAttribute:
                guard values.count == 1 else { throw malformed("the content-type attribute has \(values.count) values") }
                contentTypes.append(try oid(values[0]))
            case OID.messageDigestAttribute:
                guard values.count == 1, values[0].identifier == .octetString else {
                    throw malformed("the message-digest attribute is not one OCTET STRING")
                }
                digests.append(try octets(values[0]))
            default:
                continue
            }
        }
        guard contentTypes == [OID.data] else {
            throw malformed("the signed attributes do not say, once, that the content is data")
        }
        guard digests.count == 1 else {
            throw malformed("the signed attributes hold \(digests.count) message digests, not one")
        }
        return digests[0]
    }

    // MARK: - ASN.1 helpers

    static let explicit0 = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
    static let implicit0 = explicit0
    static let implicit1 = ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)

    static func malformed(_ message: String) -> ReceiptSignatureError {
        ReceiptSignatureError(.malformed, message)
    }

    private static func fields(of node: ASN1Node, _ name: String) throws(ReceiptSignatureError) -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { throw malformed("\(name) is not constructed") }
        return Array(nodes)
    }

    private static func oid(_ node: ASN1Node) throws(ReceiptSignatureError) -> ASN1ObjectIdentifier {
        guard node.identifier == .objectIdentifier else { throw malformed("an object identifier was expected") }
        do {
            return try ASN1ObjectIdentifier(derEncoded: node)
        } catch {
            throw malformed("an object identifier does not parse: \(error)")
        }
    }

    /// `AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters NULL OPTIONAL }` (the algorithms a receipt
    /// may use take no other parameters).
    private static func algorithm(_ node: ASN1Node) throws(ReceiptSignatureError) -> ASN1ObjectIdentifier {
        let parts = try fields(of: node, "AlgorithmIdentifier")
        guard parts.count == 1 || (parts.count == 2 && parts[1].identifier == .null) else {
            throw malformed("an algorithm identifier has parameters other than NULL")
        }
        return try oid(parts[0])
    }

    /// An OCTET STRING's octets; a constructed one (BER) is its primitive pieces joined.
    private static func octets(_ node: ASN1Node) throws(ReceiptSignatureError) -> ArraySlice<UInt8> {
        switch node.content {
        case .primitive(let bytes):
            return bytes
        case .constructed(let pieces):
            var joined: [UInt8] = []
            for piece in pieces {
                guard piece.identifier == .octetString, case .primitive(let bytes) = piece.content else {
                    throw malformed("a constructed OCTET STRING holds something other than octets")
                }
                joined.append(contentsOf: bytes)
            }
            return joined[...]
        }
    }
}
