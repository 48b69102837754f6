import AppStoreSignedData
import AppleFixtureFiles
import FakeAppStore
import Foundation
import Testing
import X509

/// Notifications V2: the outer payload, then the signed transaction and renewal info inside it, each verified.
@Suite("Signed notifications")
struct SignedNotificationTests {
    @Test("Apple's real TEST notification verifies offline at its signedDate", .needsAppleFixtures)
    func appleTest() throws {
        let verifier = SignedDataVerifier(configuration: .init(onlineChecks: false))
        let notification = try verifier.verifyNotification(try SignedDataVerifierTests.appleNotification())
        #expect(notification.notificationType == "TEST")
        #expect(notification.notificationUUID == "5e09dcfc-205e-4ea1-9883-96676f394992")
        #expect(notification.environment == "Sandbox")
        #expect(notification.bundleId == "com.Abilities")
        #expect(notification.signedDateMs == 1_662_122_492_884)
        #expect(notification.transaction == nil)
    }

    @Test("Apple's test-CA notification verifies with the test CA trusted, and only then", .needsAppleFixtures)
    func testCA() throws {
        let jws = try AppleFixtureFiles.text("appstoreserverlibrary-testca-signed-notification.jws")
        let x5c = try #require(try SignedDataVerifierTests.header(jws)["x5c"] as? [String])
        let testCA = try Certificate(derEncoded: Array(try #require(Data(base64Encoded: x5c[2]))))
        let trusting = SignedDataVerifier(configuration: .init(rootCertificates: [testCA], onlineChecks: false))
        let notification = try trusting.verifyNotification(jws)
        #expect(notification.environment == "Sandbox")
        #expect(UUID(uuidString: notification.notificationUUID) != nil)
        let error = #expect(throws: SignedDataError.self) {
            try SignedDataVerifier(configuration: .init(onlineChecks: false)).verifyNotification(jws)
        }
        #expect(error?.code == .untrustedChain)
    }

    static func signed(_ signer: JWSSigner, _ object: [String: Any]) throws -> String {
        try signer.sign(try JSONSerialization.data(withJSONObject: object))
    }

    @Test("a refund with its transaction and renewal info: each nested JWS verified; a nested one that disagrees or is forged is refused")
    func nested() throws {
        let chain = try SigningChain()
        let signer = try JWSSigner(chain: chain)
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: false)
        )
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let transaction: [String: Any] = [
            "transactionId": "2000000000000001", "originalTransactionId": "2000000000000000", "bundleId": "com.example.app",
            "productId": "pro.monthly", "purchaseDate": now - 86_400_000, "expiresDate": now + 86_400_000,
            "revocationDate": now - 1000, "revocationReason": 1, "environment": "Production", "signedDate": now,
            "webOrderLineItemId": "9000",
        ]
        let renewal: [String: Any] = [
            "originalTransactionId": "2000000000000000", "autoRenewStatus": 0, "expirationIntent": 1,
            "environment": "Production", "signedDate": now,
        ]
        func notification(transaction: String, renewal: String?) throws -> String {
            var data: [String: Any] = [
                "bundleId": "com.example.app", "environment": "Production", "appAppleId": 1_234_567_890,
                "signedTransactionInfo": transaction,
            ]
            data["signedRenewalInfo"] = renewal
            return try Self.signed(signer, [
                "notificationType": "REFUND", "notificationUUID": "8B5A2C1E-0000-4000-8000-000000000001",
                "version": "2.0", "signedDate": now, "data": data,
            ])
        }
        let good = try verifier.verifyNotification(
            notification(transaction: Self.signed(signer, transaction), renewal: Self.signed(signer, renewal))
        )
        #expect(good.notificationType == "REFUND")
        #expect(good.notificationUUID == "8b5a2c1e-0000-4000-8000-000000000001")
        #expect(good.appAppleId == 1_234_567_890)
        #expect(good.transaction?.transactionId == "2000000000000001")
        #expect(good.transaction?.revocationDateMs == now - 1000)
        #expect(good.renewalInfo?.expirationIntent == 1)

        var sandboxTransaction = transaction
        sandboxTransaction["environment"] = "Sandbox"
        let mismatch = #expect(throws: SignedDataError.self) {
            try verifier.verifyNotification(notification(transaction: Self.signed(signer, sandboxTransaction), renewal: nil))
        }
        #expect(mismatch?.code == .malformed)

        let forger = try JWSSigner(chain: SigningChain())
        let forged = #expect(throws: SignedDataError.self) {
            try verifier.verifyNotification(notification(transaction: Self.signed(forger, transaction), renewal: nil))
        }
        #expect(forged?.code == .untrustedChain)
    }

    @Test("issue 38: the renewal info's appAccountToken and eligibleWinBackOfferIds, the transaction's storefrontId are kept")
    func keptFields() throws {
        let chain = try SigningChain()
        let signer = try JWSSigner(chain: chain)
        let verifier = SignedDataVerifier(configuration: .init(rootCertificates: [chain.root], onlineChecks: false))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let transaction: [String: Any] = [
            "transactionId": "2000000000000001", "originalTransactionId": "2000000000000000",
            "bundleId": "com.example.app", "productId": "pro.monthly", "purchaseDate": now - 1000,
            "environment": "Production", "signedDate": now, "storefront": "GBR", "storefrontId": "143444",
        ]
        let renewal: [String: Any] = [
            "originalTransactionId": "2000000000000000", "autoRenewStatus": 0, "environment": "Production",
            "signedDate": now, "appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            "eligibleWinBackOfferIds": ["winback.monthly.1", "winback.monthly.2"],
        ]
        let notification = try verifier.verifyNotification(
            try Self.signed(signer, [
                "notificationType": "DID_CHANGE_RENEWAL_STATUS", "subtype": "AUTO_RENEW_DISABLED",
                "notificationUUID": "8B5A2C1E-0000-4000-8000-000000000038", "version": "2.0", "signedDate": now,
                "data": [
                    "bundleId": "com.example.app", "environment": "Production", "appAppleId": 1_234_567_890,
                    "signedTransactionInfo": try Self.signed(signer, transaction),
                    "signedRenewalInfo": try Self.signed(signer, renewal),
                ] as [String: Any],
            ])
        )
        #expect(notification.transaction?.storefront == "GBR")
        #expect(notification.transaction?.storefrontId == "143444")
        #expect(notification.renewalInfo?.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(notification.renewalInfo?.eligibleWinBackOfferIds == ["winback.monthly.1", "winback.monthly.2"])

        // A list that is not strings is malformed, never taken in part.
        var hostile = renewal
        hostile["eligibleWinBackOfferIds"] = [1, 2]
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(SignedRenewalInfo.self, from: JSONSerialization.data(withJSONObject: hostile))
        }
    }

    @Test("alg none, a payload that is not a notification, a UUID that is not one: refused")
    func malformed() throws {
        let chain = try SigningChain()
        let signer = try JWSSigner(chain: chain)
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: false)
        )
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let body: [String: Any] = ["notificationType": "TEST", "notificationUUID": "not-a-uuid", "signedDate": now]
        let badUUID = #expect(throws: SignedDataError.self) { try verifier.verifyNotification(Self.signed(signer, body)) }
        #expect(badUUID?.code == .malformed)
        let noType = #expect(throws: SignedDataError.self) {
            try verifier.verifyNotification(Self.signed(signer, ["signedDate": now]))
        }
        #expect(noType?.code == .malformed)
        let payload = JWSSigner.base64URL(Data(#"{"notificationType":"TEST","notificationUUID":"8b5a2c1e-0000-4000-8000-000000000002","signedDate":\#(now)}"#.utf8))
        let none = JWSSigner.base64URL(Data(#"{"alg":"none"}"#.utf8)) + "." + payload + "."
        let algNone = #expect(throws: SignedDataError.self) { try verifier.verifyNotification(none) }
        #expect(algNone?.code == .unsupportedHeader || algNone?.code == .malformed)
    }
}
