import AppStoreModel
import Foundation
import Testing

@testable import AppReceipt
import AppleFixtureFiles

@Suite("App receipt decoding against real Apple receipts")
struct AppReceiptFixtureTests {
    @Test("RevenueCat sandbox receipt: every in_app entry equals Apple's own verifyReceipt answer", .needsAppleFixtures)
    func revenueCatMatchesApplesAnswer() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("revenuecat-sandbox-receipt.b64"))
        let apple = try JSONDecoder().decode(
            VerifyReceiptResponse.self, from: Data(try AppleFixtureFiles.bytes("revenuecat-sandbox-verifyReceipt-response.json"))
        )
        let appleReceipt = try #require(apple.receipt)

        #expect(receipt.environment == "ProductionSandbox")
        #expect(receipt.environment == appleReceipt.receiptType)
        #expect(receipt.bundleId == "com.revenuecat.sampleapp")
        #expect(receipt.applicationVersion == appleReceipt.applicationVersion)
        #expect(receipt.originalApplicationVersion == appleReceipt.originalApplicationVersion)
        #expect(receipt.creationDate == appleReceipt.receiptCreationDateMs)
        #expect(receipt.purchases.count == 9)

        let appleInApp = try #require(appleReceipt.inApp)
        #expect(receipt.purchases.map(\.transactionId) == appleInApp.map(\.transactionId))
        #expect(receipt.purchases.map(\.productId) == appleInApp.map(\.productId))
        #expect(receipt.purchases.map(\.purchaseDate) == appleInApp.map(\.purchaseDateMs))
        #expect(receipt.purchases.map(\.expiresDate) == appleInApp.map(\.expiresDateMs))
        // Every field both sides know: quantity, ids, all dates, web order line item, trial and intro flags.
        #expect(receipt.purchases.map(\.transaction) == appleInApp)
    }

    @Test("TPInAppReceipt production receipt", .needsAppleFixtures)
    func production() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("tpinappreceipt-production-receipt.b64"))
        #expect(receipt.environment == "Production")
        #expect(receipt.bundleId == "org.getpure.pure-iphone")
        #expect(receipt.purchases.count == 4)
        #expect(receipt.purchases.allSatisfy { $0.purchaseDate != nil && $0.transactionId != nil })
    }

    @Test("TPInAppReceipt sandbox receipt signed under WWDR G5", .needsAppleFixtures)
    func sandboxG5() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("tpinappreceipt-sandbox-g5-receipt.b64"))
        #expect(receipt.environment == "ProductionSandbox")
        #expect(receipt.bundleId == "dev.bonzer.weeka.app")
        #expect(receipt.purchases.count == 2)
    }

    @Test("TPInAppReceipt legacy sandbox receipt: 187 purchases, 3 products, one subscription", .needsAppleFixtures)
    func sandboxLegacy() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("tpinappreceipt-sandbox-legacy-receipt.b64"))
        #expect(receipt.environment == "ProductionSandbox")
        #expect(receipt.bundleId == "com.nutcall.alert")
        #expect(receipt.purchases.count == 187)
        #expect(Set(receipt.purchases.compactMap(\.productId)).count == 3)
        #expect(Set(receipt.purchases.map(\.originalTransactionId)) == ["1000000603177571"])
        #expect(Set(receipt.purchases.compactMap(\.transactionId)).count == 187)
    }

    @Test("Xcode StoreKit-testing receipt: one purchase with transaction id 0", .needsAppleFixtures)
    func xcode() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("tpinappreceipt-xcode-receipt.b64"))
        #expect(receipt.environment == "Xcode")
        #expect(receipt.purchases.map(\.transactionId) == ["0"])
    }

    @Test("Xcode receipt without purchases", .needsAppleFixtures)
    func xcodeEmpty() throws {
        let receipt = try AppReceipt.decode(base64: AppleFixtureFiles.text("appstoreserverlibrary-xcode-receipt-empty.b64"))
        #expect(receipt.environment == "Xcode")
        #expect(receipt.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(receipt.purchases.isEmpty)
    }

    @Test("Xcode receipt with one pass.premium purchase", .needsAppleFixtures)
    func xcodeWithTransaction() throws {
        let receipt = try AppReceipt.decode(
            base64: AppleFixtureFiles.text("appstoreserverlibrary-xcode-receipt-with-transaction.b64")
        )
        #expect(receipt.purchases.map(\.productId) == ["pass.premium"])
        #expect(receipt.purchases.first?.isInIntroOfferPeriod == true)
    }

    @Test("base64 with line breaks and spaces reads the same", .needsAppleFixtures)
    func lineBrokenBase64() throws {
        let text = try AppleFixtureFiles.text("revenuecat-sandbox-receipt.b64")
        let compact = text.filter { !$0.isWhitespace }
        var wrapped = ""
        for (index, character) in compact.enumerated() {
            if index > 0, index % 64 == 0 { wrapped += index % 128 == 0 ? "\r\n" : "\n  " }
            wrapped.append(character)
        }
        #expect(try AppReceipt.decode(base64: wrapped) == AppReceipt.decode(base64: compact))
    }
}

@Suite("App receipt decoding of made-up structures")
struct AppReceiptSyntheticTests {
    @Test("text that is not base64 is rejected as such")
    func notBase64() {
        #expect(throws: AppReceiptError.self) { try AppReceipt.decode(base64: "not base64 at all!") }
        #expect(code(of: "not base64 at all!") == .notBase64)
        #expect(code(of: "") == .notBase64)
    }

    @Test("base64 of something that is not PKCS#7 is rejected as such")
    func notPKCS7() {
        #expect(code(of: Data("hello, receipt".utf8).base64EncodedString()) == .notPKCS7)
        // Valid DER, wrong content type (an OID that is not signedData).
        let other = DER.sequence(DER.oid([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]))
        #expect(code(of: Data(other).base64EncodedString()) == .notPKCS7)
    }

    @Test("PKCS#7 SignedData without encapsulated content has no payload")
    func noPayload() {
        let bytes = DER.contentInfo(encapsulated: DER.sequence(DER.dataOID))
        #expect(code(of: Data(bytes).base64EncodedString()) == .noPayload)
    }

    @Test("BER: indefinite lengths and a constructed OCTET STRING in segments")
    func berConstructedOctetString() throws {
        let payload = DER.set(
            DER.attribute(2, DER.utf8String("com.example.ber")),
            DER.attribute(0, DER.utf8String("Production"))
        )
        let half = payload.count / 2
        let segmented =
            [0x24, 0x80] + DER.octetString(Array(payload[..<half]))
            + DER.octetString(Array(payload[half...])) + [0, 0]
        let encapsulated = [0x30, 0x80] + DER.dataOID + [0xA0, 0x80] + segmented + [0, 0] + [0, 0]
        let receipt = try AppReceipt.decode(
            base64: Data(DER.contentInfo(encapsulated: encapsulated)).base64EncodedString())
        #expect(receipt.bundleId == "com.example.ber")
        #expect(receipt.environment == "Production")
    }

    @Test("in_app records: empty dates are absent, unknown attributes are ignored, integers and flags are read")
    func purchaseRecord() throws {
        let record = DER.set(
            DER.attribute(1701, DER.integer(2)),
            DER.attribute(1702, DER.utf8String("pro")),
            DER.attribute(1703, DER.utf8String("42")),
            DER.attribute(1704, DER.ia5String("2020-07-14T19:36:40Z")),
            DER.attribute(1708, DER.ia5String("")),
            DER.attribute(1711, DER.integer(1_000_000_054_042_695)),
            DER.attribute(1719, DER.integer(1)),
            DER.attribute(4242, [0xFF, 0x00, 0x13])  // not even ASN.1
        )
        let payload = DER.set(
            DER.attribute(2, DER.utf8String("com.example.app")),
            DER.attribute(5, [0xDE, 0xAD]),
            DER.attribute(17, record)
        )
        let bytes = DER.contentInfo(
            encapsulated: DER.sequence(DER.dataOID + DER.explicitZero(DER.octetString(payload))))
        let receipt = try AppReceipt.decode(base64: Data(bytes).base64EncodedString())
        let purchase = try #require(receipt.purchases.first)
        #expect(receipt.purchases.count == 1)
        #expect(purchase.quantity == 2)
        #expect(purchase.productId == "pro")
        #expect(purchase.transactionId == "42")
        #expect(purchase.purchaseDate == 1_594_755_400_000)
        #expect(purchase.expiresDate == nil)
        #expect(purchase.webOrderLineItemId == 1_000_000_054_042_695)
        #expect(purchase.isInIntroOfferPeriod == true)
    }

    private func code(of base64: String) -> AppReceiptError.Code? {
        do {
            _ = try AppReceipt.decode(base64: base64)
            return nil
        } catch {
            return error.code
        }
    }
}

@Suite("RFC 3339 receipt dates")
struct RFC3339Tests {
    @Test("Zulu, fractional seconds, offsets")
    func parses() {
        #expect(RFC3339.milliseconds("2020-07-14T19:36:40Z") == 1_594_755_400_000)
        #expect(RFC3339.milliseconds("2020-07-14T19:36:40.25Z") == 1_594_755_400_250)
        #expect(RFC3339.milliseconds("2020-07-14T21:36:40+02:00") == 1_594_755_400_000)
        #expect(RFC3339.milliseconds("2020-07-14T12:36:40-0700") == 1_594_755_400_000)
        #expect(RFC3339.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(RFC3339.milliseconds("2000-02-29T00:00:00Z") == 951_782_400_000)
    }

    @Test("anything else is nil")
    func rejects() {
        #expect(RFC3339.milliseconds("") == nil)
        #expect(RFC3339.milliseconds("2020-07-14") == nil)
        #expect(RFC3339.milliseconds("2020-07-14 19:36:40 Etc/GMT") == nil)
        #expect(RFC3339.milliseconds("2020-13-14T19:36:40Z") == nil)
        #expect(RFC3339.milliseconds("2020-07-14T19:36:40Zjunk") == nil)
    }
}

/// Hand-built DER for receipts the fixtures do not cover.
enum DER {
    static let dataOID = oid([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01])
    static let signedDataOID = oid([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02])

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var bytes = [UInt8]()
            var remaining = content.count
            while remaining > 0 {
                bytes.insert(UInt8(remaining & 0xFF), at: 0)
                remaining >>= 8
            }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + content
    }

    static func sequence(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [UInt8]...) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static func oid(_ content: [UInt8]) -> [UInt8] { tlv(0x06, content) }
    static func octetString(_ content: [UInt8]) -> [UInt8] { tlv(0x04, content) }
    static func utf8String(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5String(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
    static func explicitZero(_ content: [UInt8]) -> [UInt8] { tlv(0xA0, content) }

    static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian, Array.init)
        while bytes.count > 1, bytes[0] == 0, bytes[1] & 0x80 == 0 {
            bytes.removeFirst()
        }
        return tlv(0x02, bytes)
    }

    /// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        sequence(integer(type), integer(1), octetString(value))
    }

    /// ContentInfo { signedData, [0] SignedData { version, digestAlgorithms, encapsulated, signerInfos } }.
    static func contentInfo(encapsulated: [UInt8]) -> [UInt8] {
        sequence(signedDataOID, explicitZero(sequence(integer(1), set(), encapsulated, set())))
    }
}
