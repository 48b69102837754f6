import AppleFixtureFiles
@testable import AppReceipt
@testable import FakeAppStore
import Foundation

/// The inputs mutations start from: real Apple data from ../shared/fixtures/apple, and documents made here in the
/// shapes Apple sends (the fake App Store's payload encoders, the Server API models) where no real one is public.
enum FuzzSeeds {
    static let receiptFiles = [
        "revenuecat-sandbox-receipt.b64", "tpinappreceipt-production-receipt.b64",
        "tpinappreceipt-sandbox-g5-receipt.b64", "tpinappreceipt-xcode-receipt.b64",
        "appstoreserverlibrary-xcode-receipt-empty.b64", "appstoreserverlibrary-xcode-receipt-with-transaction.b64",
    ]
    /// 187 purchases, 79 kB: a seed of its own, used for a small share of the inputs (each costs as much as 20 others).
    static let largeReceiptFile = "tpinappreceipt-sandbox-legacy-receipt.b64"

    // MARK: App receipts

    static func receiptText(_ name: String) throws -> String {
        try AppleFixtureFiles.text(name)
    }

    static func receiptContainer(_ name: String) throws -> [UInt8] {
        guard let bytes = Base64Text.decode(try receiptText(name)) else { throw SeedError("\(name) is not base64") }
        return bytes
    }

    static func receiptPayload(_ name: String) throws -> [UInt8] {
        Array(try AppReceipt.payload(ofPKCS7: try receiptContainer(name)))
    }

    /// Receipt payloads made here: every attribute this decoder reads, with values at and past its limits.
    static func syntheticPayloads() -> [[UInt8]] {
        func purchase(_ attributes: [(Int64, [UInt8])]) -> [UInt8] {
            DER.set(attributes.map { DER.attribute($0.0, $0.1) })
        }
        let dates = ["2019-07-31T18:22:16Z", "9999-12-31T23:59:60.999999999+23:59", "0000-01-01T00:00:00-23:59",
                     "2020-02-30T24:00:00.1Z", ""]
        var payloads: [[UInt8]] = []
        for (index, date) in dates.enumerated() {
            let record = purchase([
                (1701, DER.integer([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])),
                (1702, DER.utf8("pro.monthly")), (1703, DER.utf8("10000000\(index)")),
                (1704, DER.ia5(date)), (1705, DER.utf8("1000000000")), (1706, DER.ia5(date)), (1708, DER.ia5(date)),
                (1711, DER.integer([0x80, 0, 0, 0, 0, 0, 0, 0])), (1712, DER.ia5(date)),
                (1713, DER.integer([0x01])), (1719, DER.integer([0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01])),
            ])
            payloads.append(DER.set([
                DER.attribute(0, DER.utf8("Production")), DER.attribute(2, DER.utf8("com.example.app")),
                DER.attribute(3, DER.utf8("1.0")), DER.attribute(12, DER.ia5(date)), DER.attribute(17, record),
                DER.attribute(17, record), DER.attribute(19, DER.utf8("1")),
                DER.attribute(-1, DER.integer([0xFF])),
            ]))
        }
        return payloads
    }

    // MARK: verifyReceipt

    /// Apple's real answer, and smaller documents cut from it (one purchase each), so most inputs cost little.
    static func verifyReceiptResponses() throws -> (full: [UInt8], small: [[UInt8]]) {
        let full = try AppleFixtureFiles.bytes("revenuecat-sandbox-verifyReceipt-response.json")
        guard var object = try JSONSerialization.jsonObject(with: Data(full)) as? [String: Any],
            var receipt = object["receipt"] as? [String: Any], let inApp = receipt["in_app"] as? [Any],
            let latest = object["latest_receipt_info"] as? [Any]
        else { throw SeedError("the verifyReceipt response is not the expected shape") }
        object["latest_receipt"] = "MIIT"
        var small: [[UInt8]] = []
        for index in [0, inApp.count - 1] {
            receipt["in_app"] = [inApp[index]]
            object["receipt"] = receipt
            object["latest_receipt_info"] = [latest[index]]
            small.append(Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        small.append(Array(#"{"status":21007,"environment":"Production","is_retryable":false}"#.utf8))
        small.append(Array(#"{"status":21100,"is-retryable":true}"#.utf8))
        small.append(Array(#"{"status":0,"receipt":{"bundle_id":"a","in_app":[{"quantity":1,"transaction_id":1,"product_id":"p","purchase_date_ms":1594755400000,"cancellation_date_ms":"1594755400001","cancellation_reason":"0"}]}}"#.utf8))
        return (full, small)
    }

    // MARK: Signed data (JWS payloads)

    static func jwsPayload(_ compact: String) throws -> [UInt8] {
        let parts = compact.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        guard parts.count == 3, let payload = Base64URLText.decode(String(parts[1])) else {
            throw SeedError("not a compact JWS")
        }
        return payload
    }

    static func realTransactionPayloads() throws -> [[UInt8]] {
        try ["appstoreserverlibrary-xcode-signed-transaction.jws", "appstoreserverlibrary-testca-signed-transaction.jws"]
            .map { try jwsPayload(try AppleFixtureFiles.text($0)) }
    }

    static func realNotificationPayloads() throws -> [[UInt8]] {
        [
            try jwsPayload(try AppleFixtureFiles.text("appstoreserverlibrary-testca-signed-notification.jws")),
            try jwsPayload(try AppleFixtureFiles.appleTestNotification()),
        ]
    }

    /// A transaction as the fake App Store signs one (Apple's documented fields), for the environment given.
    static func madeTransaction(environment: String, revoked: Bool = false) throws -> [UInt8] {
        try FakePayloads.json(FakePayloads.Transaction(
            transactionId: "2000000123456789", originalTransactionId: "2000000123456780",
            webOrderLineItemId: "2000000012345678", bundleId: "com.example.app", productId: "pro.monthly",
            subscriptionGroupIdentifier: "21345678", purchaseDate: 1_700_000_000_000,
            originalPurchaseDate: 1_690_000_000_000, expiresDate: 1_702_592_000_000, quantity: 1,
            type: "Auto-Renewable Subscription", appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            signedDate: 1_700_000_000_500, revocationReason: revoked ? 1 : nil,
            revocationDate: revoked ? 1_700_100_000_000 : nil, environment: environment, transactionReason: "RENEWAL"
        ))
    }

    static func madeRenewalInfo(environment: String, expired: Bool = false) throws -> [UInt8] {
        var info = FakePayloads.RenewalInfo(
            originalTransactionId: "2000000123456780", productId: "pro.monthly", autoRenewProductId: "pro.yearly",
            autoRenewStatus: expired ? 0 : 1, expirationIntent: expired ? 2 : nil, renewalDate: 1_702_592_000_000,
            recentSubscriptionStartDate: 1_690_000_000_000, environment: environment, signedDate: 1_700_000_000_500
        )
        info.isInBillingRetryPeriod = expired
        var bytes = try FakePayloads.json(info)
        // The fields the fake does not write, which the verifier reads.
        bytes.removeLast()
        bytes += Array(#","gracePeriodExpiresDate":1702600000000,"offerType":1,"priceIncreaseStatus":0}"#.utf8)
        return bytes
    }

    /// An unsigned JWS around `payload` (for Xcode data, which no App Store key signs, and for the decoders that
    /// read a JWS's payload only).
    static func unsignedJWS(_ payload: [UInt8]) -> String {
        String(decoding: unsignedHeader + Base64URLText.encodedBytes(payload) + Array(".AAAA".utf8), as: UTF8.self)
    }

    private static let unsignedHeader =
        Base64URLText.encodedBytes(Array(#"{"alg":"ES256","kid":"Apple_Xcode_Key","typ":"JWT"}"#.utf8)) + [UInt8(ascii: ".")]

    /// V2 notifications for the Xcode environment (so the verifier takes them unsigned when test environments are
    /// allowed), with a nested transaction and renewal info, as Apple's ResponseBodyV2DecodedPayload.
    static func madeNotification(
        type: String, subtype: String?, transaction: [UInt8]?, renewal: [UInt8]?, appAppleId: Int64? = 1_234_567_890
    ) throws -> [UInt8] {
        try FakePayloads.json(FakePayloads.Notification(
            notificationType: type, subtype: subtype, notificationUUID: "0f6a3f1b-9f1c-4c1e-8d2e-6d1f5c3b2a10",
            data: FakePayloads.Notification.Data(
                appAppleId: appAppleId, bundleId: "com.example.app", environment: "Xcode",
                signedTransactionInfo: transaction.map(unsignedJWS), signedRenewalInfo: renewal.map(unsignedJWS),
                status: 1
            ),
            signedDate: 1_700_000_000_900
        ))
    }

    // MARK: Server API answers

    /// The JWS strings found in the shared fixtures, as Apple's answers carry them.
    static func realJWSStrings() throws -> [String] {
        try ["appstoreserverlibrary-xcode-signed-transaction.jws", "appstoreserverlibrary-testca-signed-transaction.jws"]
            .map { try AppleFixtureFiles.text($0).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    static func json(_ value: some Encodable) throws -> [UInt8] {
        try FakePayloads.json(value)
    }
}

struct SeedError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Base64url without padding (RFC 7515), for the JWS made here.
enum Base64URLText {
    static func encode(_ bytes: [UInt8]) -> String {
        String(decoding: encodedBytes(bytes), as: UTF8.self)
    }

    /// On bytes rather than with String's replacing (which goes through NSString, and cost the notification fuzz
    /// test a third of its time).
    static func encodedBytes(_ bytes: [UInt8]) -> [UInt8] {
        var encoded = [UInt8](Data(bytes).base64EncodedData())
        encoded.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices {
                switch buffer[index] {
                case UInt8(ascii: "+"): buffer[index] = UInt8(ascii: "-")
                case UInt8(ascii: "/"): buffer[index] = UInt8(ascii: "_")
                default: break
                }
            }
        }
        while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
        return encoded
    }

    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}

/// Just enough DER to write receipt payloads: definite lengths, the tags a receipt uses.
enum DER {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            var octets: [UInt8] = []
            while count > 0 {
                octets.insert(UInt8(count & 0xFF), at: 0)
                count >>= 8
            }
            length = [0x80 | UInt8(octets.count)] + octets
        }
        return [tag] + length + content
    }

    static func integer(_ content: [UInt8]) -> [UInt8] { tlv(0x02, content) }
    static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian, Array.init)
        while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) {
            bytes.removeFirst()
        }
        return integer(bytes)
    }
    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
    static func set(_ elements: [[UInt8]]) -> [UInt8] { tlv(0x31, elements.flatMap { $0 }) }
    /// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }
}
