import AppReceipt
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Makes app receipts as the App Store does: the payload (`SET OF ReceiptAttribute`) in a PKCS#7 SignedData signed
/// with RSA PKCS#1 v1.5 by a `ReceiptSigningChain`'s leaf, carrying leaf, intermediate and root. Like Apple's, no
/// signed attributes by default (the signature covers the payload); with `signedAttributes`, content type and message
/// digest are signed instead, as CMS allows.
public struct ReceiptSigner: Sendable {
    public enum DigestAlgorithm: Sendable {
        /// Apple's receipts until about 2016.
        case sha1
        /// Apple's receipts since.
        case sha256
    }

    public struct Options: Sendable {
        public var digest: DigestAlgorithm = .sha256
        public var signedAttributes = false
        /// The certificates the receipt carries instead of the chain's leaf, intermediate and root (attack tests:
        /// a set built to make the chain search costly).
        public var certificates: [Certificate]?
        /// How many signer infos the receipt carries (Apple's carry one): the same one repeated.
        public var signerInfos = 1
        public init() {}
    }

    public let chain: ReceiptSigningChain
    public var options: Options

    public init(chain: ReceiptSigningChain, options: Options = Options()) {
        self.chain = chain
        self.options = options
    }

    /// The receipt as an app sends it in `receipt-data`.
    public func base64(_ receipt: AppReceipt) throws -> String {
        Data(try pkcs7(receipt)).base64EncodedString()
    }

    /// The PKCS#7 bytes (DER).
    public func pkcs7(_ receipt: AppReceipt) throws -> [UInt8] {
        try pkcs7(payload: Self.payload(receipt))
    }

    /// A PKCS#7 SignedData over any payload bytes.
    public func pkcs7(payload: [UInt8]) throws -> [UInt8] {
        let digest: [UInt8]
        let digestOID: ASN1ObjectIdentifier
        switch options.digest {
        case .sha1:
            digestOID = [1, 3, 14, 3, 2, 26]
            digest = Array(Insecure.SHA1.hash(data: payload))
        case .sha256:
            digestOID = [2, 16, 840, 1, 101, 3, 4, 2, 1]
            digest = Array(SHA256.hash(data: payload))
        }
        let signedBytes: [UInt8]
        if options.signedAttributes {
            var set = DER.Serializer()
            try set.appendConstructedNode(identifier: .set) { try Self.signedAttributes(digest, &$0) }
            signedBytes = set.serializedBytes
        } else {
            signedBytes = payload
        }
        let signature: _RSA.Signing.RSASignature
        switch options.digest {
        case .sha1:
            signature = try chain.leafKey.signature(
                for: Insecure.SHA1.hash(data: signedBytes), padding: .insecurePKCS1v1_5
            )
        case .sha256:
            signature = try chain.leafKey.signature(for: SHA256.hash(data: signedBytes), padding: .insecurePKCS1v1_5)
        }

        let contextZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { contentInfo in
            try contentInfo.serialize(Self.signedDataOID)
            try contentInfo.appendConstructedNode(identifier: contextZero) { explicit in
                try explicit.appendConstructedNode(identifier: .sequence) { signedData in
                    try signedData.serialize(1)
                    try signedData.appendConstructedNode(identifier: .set) { set in
                        try Self.algorithm(digestOID, &set)
                    }
                    try signedData.appendConstructedNode(identifier: .sequence) { encapsulated in
                        try encapsulated.serialize(Self.dataOID)
                        try encapsulated.appendConstructedNode(identifier: contextZero) { content in
                            try content.serialize(ASN1OctetString(contentBytes: payload[...]))
                        }
                    }
                    try signedData.appendConstructedNode(identifier: contextZero) { certificates in
                        for certificate in options.certificates ?? [chain.leaf, chain.intermediate, chain.root] {
                            try certificates.serialize(certificate)
                        }
                    }
                    try signedData.appendConstructedNode(identifier: .set) { signerInfos in
                        for _ in 0..<options.signerInfos {
                            try signerInfos.appendConstructedNode(identifier: .sequence) { signer in
                                try signer.serialize(1)
                                try signer.appendConstructedNode(identifier: .sequence) { sid in
                                    try sid.serialize(chain.leaf.issuer)
                                    sid.appendPrimitiveNode(identifier: .integer) { bytes in
                                        bytes.append(contentsOf: chain.leaf.serialNumber.bytes)
                                    }
                                }
                                try Self.algorithm(digestOID, &signer)
                                if options.signedAttributes {
                                    try signer.appendConstructedNode(identifier: contextZero) {
                                        try Self.signedAttributes(digest, &$0)
                                    }
                                }
                                try Self.algorithm([1, 2, 840, 113_549, 1, 1, 1], &signer)
                                try signer.serialize(ASN1OctetString(contentBytes: Array(signature.rawRepresentation)[...]))
                            }
                        }
                    }
                }
            }
        }
        return serializer.serializedBytes
    }

    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let contentTypeOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
    static let messageDigestOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]

    /// Content type (data) and message digest, in DER order.
    private static func signedAttributes(_ digest: [UInt8], _ coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { attribute in
            try attribute.serialize(Self.contentTypeOID)
            try attribute.appendConstructedNode(identifier: .set) { values in
                try values.serialize(Self.dataOID)
            }
        }
        try coder.appendConstructedNode(identifier: .sequence) { attribute in
            try attribute.serialize(Self.messageDigestOID)
            try attribute.appendConstructedNode(identifier: .set) { values in
                try values.serialize(ASN1OctetString(contentBytes: digest[...]))
            }
        }
    }

    private static func algorithm(_ oid: ASN1ObjectIdentifier, _ coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { algorithm in
            try algorithm.serialize(oid)
            try algorithm.serialize(ASN1Null())
        }
    }

    /// The receipt payload: `SET OF ReceiptAttribute { type, version 1, value OCTET STRING (DER) }`, the attribute
    /// numbers `AppReceipt` reads. Dates to the second, as Apple writes them.
    public static func payload(_ receipt: AppReceipt) throws -> [UInt8] {
        var attributes: [(Int, [UInt8])] = []
        func add(_ type: Int, utf8 value: String?) throws {
            guard let value else { return }
            attributes.append((type, try der { try $0.serialize(ASN1UTF8String(value)) }))
        }
        func add(_ type: Int, date value: Int64?) throws {
            guard let value else { return }
            attributes.append((type, try der { try $0.serialize(ASN1IA5String(rfc3339(value))) }))
        }
        try add(0, utf8: receipt.environment)
        try add(2, utf8: receipt.bundleId)
        try add(3, utf8: receipt.applicationVersion)
        try add(12, date: receipt.creationDate)
        try add(19, utf8: receipt.originalApplicationVersion)
        for purchase in receipt.purchases {
            attributes.append((17, try record(purchase)))
        }
        return try set(attributes)
    }

    private static func record(_ purchase: AppReceiptPurchase) throws -> [UInt8] {
        var attributes: [(Int, [UInt8])] = []
        func add(_ type: Int, utf8 value: String?) throws {
            guard let value else { return }
            attributes.append((type, try der { try $0.serialize(ASN1UTF8String(value)) }))
        }
        func add(_ type: Int, date value: Int64?) throws {
            guard let value else { return }
            attributes.append((type, try der { try $0.serialize(ASN1IA5String(rfc3339(value))) }))
        }
        func add(_ type: Int, integer value: Int64?) throws {
            guard let value else { return }
            attributes.append((type, try der { try $0.serialize(value) }))
        }
        try add(1701, integer: purchase.quantity.map(Int64.init))
        try add(1702, utf8: purchase.productId)
        try add(1703, utf8: purchase.transactionId)
        try add(1704, date: purchase.purchaseDate)
        try add(1705, utf8: purchase.originalTransactionId)
        try add(1706, date: purchase.originalPurchaseDate)
        try add(1708, date: purchase.expiresDate)
        try add(1711, integer: purchase.webOrderLineItemId)
        try add(1712, date: purchase.cancellationDate)
        try add(1713, integer: purchase.isTrialPeriod.map { $0 ? 1 : 0 })
        try add(1719, integer: purchase.isInIntroOfferPeriod.map { $0 ? 1 : 0 })
        return try set(attributes)
    }

    private static func set(_ attributes: [(Int, [UInt8])]) throws -> [UInt8] {
        try der { coder in
            try coder.appendConstructedNode(identifier: .set) { set in
                for (type, value) in attributes {
                    try set.appendConstructedNode(identifier: .sequence) { attribute in
                        try attribute.serialize(type)
                        try attribute.serialize(1)
                        try attribute.serialize(ASN1OctetString(contentBytes: value[...]))
                    }
                }
            }
        }
    }

    private static func der(_ write: (inout DER.Serializer) throws -> Void) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try write(&serializer)
        return serializer.serializedBytes
    }

    /// Milliseconds since 1970 as `2024-02-23T17:27:16Z`.
    static func rfc3339(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
