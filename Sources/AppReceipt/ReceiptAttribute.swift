import SwiftASN1

/// One `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` of an app receipt
/// payload or of an in-app purchase record. `value` holds DER of its own (a string or an integer), read on demand so
/// that attributes this decoder does not know (opaque values, hashes) are never parsed.
struct ReceiptAttribute {
    var type: Int64
    var value: ArraySlice<UInt8>

    /// The attributes of `SET OF ReceiptAttribute`; elements that are not attribute sequences are skipped.
    static func attributes(ofSet bytes: ArraySlice<UInt8>) throws(AppReceiptError) -> [ReceiptAttribute] {
        let root: ASN1Node
        do {
            root = try BER.parse(bytes)
        } catch {
            throw AppReceiptError(.malformedPayload, "the receipt payload is not ASN.1 (\(error))")
        }
        guard root.identifier == .set, case .constructed(let elements) = root.content else {
            throw AppReceiptError(.malformedPayload, "the receipt payload is not a SET of attributes")
        }
        var attributes = [ReceiptAttribute]()
        for element in elements {
            guard element.identifier == .sequence, case .constructed(let fields) = element.content else { continue }
            var iterator = fields.makeIterator()
            guard let typeNode = iterator.next(), typeNode.identifier == .integer,
                case .primitive(let typeBytes) = typeNode.content, let type = ASN1Bytes.integer(typeBytes),
                let versionNode = iterator.next(), versionNode.identifier == .integer,
                let valueNode = iterator.next(), valueNode.identifier == .octetString,
                let value = ASN1Bytes.octets(of: valueNode)
            else { continue }
            attributes.append(ReceiptAttribute(type: type, value: value))
        }
        return attributes
    }

    /// The value as text (UTF8String, IA5String or another string type); nil when it is not a string.
    var string: String? {
        guard let node = try? BER.parse(value), case .primitive(let bytes) = node.content else { return nil }
        switch node.identifier {
        case .utf8String, .ia5String, .printableString, .visibleString, .generalString, .teletexString,
            .numericString:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return nil
        }
    }

    /// The value as an INTEGER; nil when it is not an integer or does not fit in 64 bits.
    var integer: Int64? {
        guard let node = try? BER.parse(value), node.identifier == .integer,
            case .primitive(let bytes) = node.content
        else { return nil }
        return ASN1Bytes.integer(bytes)
    }

    /// The value as an RFC 3339 date string in milliseconds since 1970; an empty string is nil.
    var date: Int64? {
        guard let text = string, !text.isEmpty else { return nil }
        return RFC3339.milliseconds(text)
    }
}

/// Helpers over raw ASN.1 content bytes, lenient where BER allows more than DER.
enum ASN1Bytes {
    /// A two's-complement INTEGER of at most 8 content bytes (leading zero bytes excepted).
    static func integer(_ bytes: ArraySlice<UInt8>) -> Int64? {
        guard let first = bytes.first else { return nil }
        var content = bytes
        while content.count > 8, content.first == 0 {
            content = content.dropFirst()
        }
        guard content.count <= 8 else { return nil }
        var value: Int64 = first & 0x80 != 0 ? -1 : 0
        for byte in content {
            value = (value << 8) | Int64(byte)
        }
        return value
    }

    /// The contents of an OCTET STRING, joining the segments of a BER constructed one.
    static func octets(of node: ASN1Node) -> ArraySlice<UInt8>? {
        switch node.content {
        case .primitive(let bytes):
            return bytes
        case .constructed(let segments):
            var joined = [UInt8]()
            for segment in segments {
                guard segment.identifier == .octetString, let bytes = octets(of: segment) else { return nil }
                joined.append(contentsOf: bytes)
            }
            return joined[...]
        }
    }
}
