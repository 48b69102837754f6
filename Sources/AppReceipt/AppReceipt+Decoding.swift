import SwiftASN1

extension AppReceipt {
    /// Reads an app receipt as an app sends it in `receipt-data`: base64 (line breaks and spaces allowed) of a PKCS#7
    /// SignedData whose content is the receipt payload. The signature is not checked: this is a stand-in for Apple.
    public static func decode(base64: String) throws(AppReceiptError) -> AppReceipt {
        guard let bytes = Base64Text.decode(base64) else {
            throw AppReceiptError(.notBase64, "the receipt is not base64")
        }
        return try decode(pkcs7: bytes)
    }

    /// Reads an app receipt from the bytes of its PKCS#7 container (BER or DER).
    public static func decode(pkcs7 bytes: [UInt8]) throws(AppReceiptError) -> AppReceipt {
        let payload = try payload(ofPKCS7: bytes)
        return try decode(payload: payload)
    }

    /// ContentInfo → SignedData → encapContentInfo → [0] EXPLICIT OCTET STRING.
    static func payload(ofPKCS7 bytes: [UInt8]) throws(AppReceiptError) -> ArraySlice<UInt8> {
        let contentInfo: ASN1Node
        do {
            contentInfo = try BER.parse(bytes)
        } catch {
            throw AppReceiptError(.notPKCS7, "the receipt is not ASN.1, so not PKCS#7 (\(error))")
        }
        guard contentInfo.identifier == .sequence, let contentInfoFields = children(of: contentInfo),
            contentInfoFields.count >= 2, isOID(contentInfoFields[0], ObjectIdentifiers.signedData),
            contentInfoFields[1].identifier == .explicitZero,
            let signedDataWrapper = children(of: contentInfoFields[1]),
            let signedData = signedDataWrapper.first, signedData.identifier == .sequence,
            let signedDataFields = children(of: signedData), signedDataFields.count >= 3
        else {
            throw AppReceiptError(.notPKCS7, "the receipt is not a PKCS#7 SignedData structure")
        }
        // SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo SEQUENCE, … }
        let encapsulated = signedDataFields[2]
        guard encapsulated.identifier == .sequence, let encapsulatedFields = children(of: encapsulated),
            let contentType = encapsulatedFields.first, isOID(contentType, ObjectIdentifiers.data)
        else {
            throw AppReceiptError(.noPayload, "the PKCS#7 SignedData does not encapsulate data")
        }
        guard encapsulatedFields.count >= 2, encapsulatedFields[1].identifier == .explicitZero,
            let wrapped = children(of: encapsulatedFields[1]), let octetString = wrapped.first,
            octetString.identifier == .octetString, let payload = ASN1Bytes.octets(of: octetString),
            !payload.isEmpty
        else {
            throw AppReceiptError(.noPayload, "the PKCS#7 SignedData carries no receipt payload")
        }
        return payload
    }

    /// The payload: `SET OF ReceiptAttribute`. Unknown attributes are ignored.
    static func decode(payload: ArraySlice<UInt8>) throws(AppReceiptError) -> AppReceipt {
        var receipt = AppReceipt()
        for attribute in try ReceiptAttribute.attributes(ofSet: payload) {
            switch attribute.type {
            case 0: receipt.environment = attribute.string
            case 2: receipt.bundleId = attribute.string
            case 3: receipt.applicationVersion = attribute.string
            case 12: receipt.creationDate = attribute.date
            case 17: receipt.purchases.append(try AppReceiptPurchase.decode(record: attribute.value))
            case 19: receipt.originalApplicationVersion = attribute.string
            default: continue
            }
        }
        return receipt
    }

    private static func children(of node: ASN1Node) -> [ASN1Node]? {
        guard case .constructed(let nodes) = node.content else { return nil }
        return Array(nodes)
    }

    private static func isOID(_ node: ASN1Node, _ expected: ASN1ObjectIdentifier) -> Bool {
        guard node.identifier == .objectIdentifier else { return false }
        return (try? ASN1ObjectIdentifier(derEncoded: node)) == expected
    }

    private enum ObjectIdentifiers {
        static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
        static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    }
}

extension AppReceiptPurchase {
    /// One in-app purchase record: the DER of a nested `SET OF ReceiptAttribute`.
    static func decode(record: ArraySlice<UInt8>) throws(AppReceiptError) -> AppReceiptPurchase {
        var purchase = AppReceiptPurchase()
        for attribute in try ReceiptAttribute.attributes(ofSet: record) {
            switch attribute.type {
            case 1701: purchase.quantity = attribute.integer.flatMap { Int(exactly: $0) }
            case 1702: purchase.productId = attribute.string
            case 1703: purchase.transactionId = attribute.string
            case 1704: purchase.purchaseDate = attribute.date
            case 1705: purchase.originalTransactionId = attribute.string
            case 1706: purchase.originalPurchaseDate = attribute.date
            case 1708: purchase.expiresDate = attribute.date
            case 1711: purchase.webOrderLineItemId = attribute.integer
            case 1712: purchase.cancellationDate = attribute.date
            case 1713: purchase.isTrialPeriod = attribute.integer.map { $0 != 0 }
            case 1719: purchase.isInIntroOfferPeriod = attribute.integer.map { $0 != 0 }
            default: continue
            }
        }
        return purchase
    }
}

extension ASN1Identifier {
    /// `[0]` in constructed form, as PKCS#7 uses for EXPLICIT content.
    fileprivate static let explicitZero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
}
