import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing
import X509

/// Xcode and LocalTesting data: accepted without a signature only when the setting is on and every environment in
/// the payload, and in a notification's nested payloads, is that same test environment. Whatever names Production
/// or Sandbox anywhere is verified. The "unsigned" data here is signed by a chain nobody trusts.
@Suite("Signed data: test environments")
struct TestEnvironmentTests {
    static let trusted = Result { try JWSSigner(chain: SigningChain()) }
    static let untrusted = Result { try JWSSigner(chain: SigningChain()) }
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    static func verifier(allowTestEnvironments: Bool) throws -> SignedDataVerifier {
        SignedDataVerifier(
            configuration: .init(
                rootCertificates: [try trusted.get().chain.root], onlineChecks: false,
                allowTestEnvironments: allowTestEnvironments
            )
        )
    }

    static func sign(_ signer: Result<JWSSigner, any Error>, _ object: [String: Any]) throws -> String {
        try signer.get().sign(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func transaction(environment: String?) -> [String: Any] {
        var object: [String: Any] = [
            "transactionId": "2000000000000001", "originalTransactionId": "2000000000000000",
            "bundleId": "com.example.app", "productId": "pro.monthly", "purchaseDate": nowMs - 1000,
            "expiresDate": nowMs + 86_400_000, "signedDate": nowMs,
        ]
        object["environment"] = environment
        return object
    }

    /// A REFUND notification; `top` is a top-level `environment` (notifications have none).
    static func notification(
        by signer: Result<JWSSigner, any Error>, top: String? = nil, data environment: String?,
        transaction: String? = nil, renewal: String? = nil
    ) throws -> String {
        var data: [String: Any] = ["bundleId": "com.example.app", "appAppleId": 1_234_567_890]
        data["environment"] = environment
        data["signedTransactionInfo"] = transaction
        data["signedRenewalInfo"] = renewal
        var object: [String: Any] = [
            "notificationType": "REFUND", "notificationUUID": UUID().uuidString, "signedDate": nowMs, "data": data,
        ]
        object["environment"] = top
        return try sign(signer, object)
    }

    static func expectRefused(
        _ verifier: SignedDataVerifier, _ jws: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: SignedDataError.self, sourceLocation: sourceLocation) {
            try verifier.verifyNotification(jws)
        }
        #expect(error?.isRetryable == false, sourceLocation: sourceLocation)
    }

    @Test("Xcode data: refused with the setting off; accepted unsigned with it on, as Xcode data")
    func consistentXcode() throws {
        let transaction = try Self.sign(Self.untrusted, Self.transaction(environment: "Xcode"))
        let off = #expect(throws: SignedDataError.self) { try Self.verifier(allowTestEnvironments: false).verify(transaction) }
        #expect(off?.code == .testEnvironment)
        let on = try Self.verifier(allowTestEnvironments: true)
        let verified = try on.verify(transaction)
        #expect(verified.environment == "Xcode")
        #expect(!verified.isSigned)
        let notification = try on.verifyNotification(
            Self.notification(by: Self.untrusted, data: "LocalTesting", transaction: Self.sign(
                Self.untrusted, Self.transaction(environment: "LocalTesting")
            ))
        )
        #expect(notification.environment == "LocalTesting")
        #expect(notification.transaction?.environment == "LocalTesting")
    }

    @Test("attack 4: an unsigned notification saying Xcode at the top and Production in data is refused")
    func mixedTopAndData() throws {
        let on = try Self.verifier(allowTestEnvironments: true)
        for (top, data) in [("Xcode", "Production"), ("Xcode", "Sandbox"), ("Production", "Xcode"), ("Xcode", "LocalTesting")] {
            let jws = try Self.notification(
                by: Self.untrusted, top: top, data: data,
                transaction: Self.sign(Self.untrusted, Self.transaction(environment: nil))
            )
            Self.expectRefused(on, jws)
            let error = #expect(throws: SignedDataError.self) { try on.verify(jws) }
            #expect(error != nil, "\(top)/\(data)")
        }
        // A transaction that names Xcode at the top and Production in a `data` member of its own.
        var transaction = Self.transaction(environment: "Xcode")
        transaction["data"] = ["environment": "Production"]
        #expect(throws: SignedDataError.self) { try on.verify(try Self.sign(Self.untrusted, transaction)) }
    }

    @Test("attack 4: an unsigned Xcode notification whose nested transaction names no environment, or Production, is refused")
    func nestedEnvironment() throws {
        let on = try Self.verifier(allowTestEnvironments: true)
        // Nested: environment null, data.environment Xcode (so it passed unsigned before), or Production (unsigned).
        var nullEnvironment = Self.transaction(environment: nil)
        nullEnvironment["data"] = ["environment": "Xcode"]
        for nested in [
            try Self.sign(Self.untrusted, nullEnvironment),
            try Self.sign(Self.untrusted, Self.transaction(environment: nil)),
            try Self.sign(Self.untrusted, Self.transaction(environment: "Production")),
            try Self.sign(Self.trusted, Self.transaction(environment: "Production")),
            try Self.sign(Self.untrusted, Self.transaction(environment: "LocalTesting")),
        ] {
            Self.expectRefused(on, try Self.notification(by: Self.untrusted, data: "Xcode", transaction: nested))
            Self.expectRefused(on, try Self.notification(by: Self.untrusted, data: "Xcode", renewal: nested))
        }
        // A signed Production notification carrying unsigned Xcode data.
        let xcode = try Self.sign(Self.untrusted, Self.transaction(environment: "Xcode"))
        Self.expectRefused(on, try Self.notification(by: Self.trusted, data: "Production", transaction: xcode))
        Self.expectRefused(on, try Self.notification(by: Self.trusted, data: "Production", renewal: xcode))
        // An unsigned notification naming no environment at all is not test data: its signature is checked.
        Self.expectRefused(on, try Self.notification(by: Self.untrusted, data: nil))
        // The same, all signed and all Production: accepted.
        let good = try on.verifyNotification(
            Self.notification(
                by: Self.trusted, data: "Production",
                transaction: Self.sign(Self.trusted, Self.transaction(environment: "Production"))
            )
        )
        #expect(good.environment == "Production")
    }

    @Test("the renewal info is verified (its own signature and chain) and must be for the notification's environment")
    func renewalInfo() throws {
        let verifier = try Self.verifier(allowTestEnvironments: false)
        let renewal: [String: Any] = [
            "originalTransactionId": "2000000000000000", "autoRenewStatus": 0, "expirationIntent": 1,
            "environment": "Production", "signedDate": Self.nowMs,
        ]
        let good = try verifier.verifyNotification(
            Self.notification(by: Self.trusted, data: "Production", renewal: Self.sign(Self.trusted, renewal))
        )
        #expect(good.renewalInfo?.expirationIntent == 1)
        let forged = #expect(throws: SignedDataError.self) {
            try verifier.verifyNotification(
                Self.notification(by: Self.trusted, data: "Production", renewal: Self.sign(Self.untrusted, renewal))
            )
        }
        #expect(forged?.code == .untrustedChain)
        var tampered = try Self.sign(Self.trusted, renewal).split(separator: ".").map(String.init)
        var changed = renewal
        changed["expirationIntent"] = 2
        tampered[1] = JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: changed))
        let badSignature = #expect(throws: SignedDataError.self) {
            try verifier.verifyNotification(
                Self.notification(by: Self.trusted, data: "Production", renewal: tampered.joined(separator: "."))
            )
        }
        #expect(badSignature?.code == .badSignature)
        for environment in ["Sandbox", nil] as [String?] {
            var other = renewal
            other["environment"] = environment
            let mismatch = #expect(throws: SignedDataError.self) {
                try verifier.verifyNotification(
                    Self.notification(by: Self.trusted, data: "Production", renewal: Self.sign(Self.trusted, other))
                )
            }
            #expect(mismatch?.code == .malformed, "\(environment ?? "none")")
        }
    }

    @Test("the nested transaction must be for the notification's app")
    func nestedBundleId() throws {
        let verifier = try Self.verifier(allowTestEnvironments: false)
        for bundleId in ["com.attacker.app", nil] as [String?] {
            var transaction = Self.transaction(environment: "Production")
            transaction["bundleId"] = bundleId
            let error = #expect(throws: SignedDataError.self) {
                try verifier.verifyNotification(
                    Self.notification(
                        by: Self.trusted, data: "Production", transaction: Self.sign(Self.trusted, transaction)
                    )
                )
            }
            #expect(error?.code == .malformed, "\(bundleId ?? "none")")
            #expect(error?.message.contains("com.example.app") == true)
        }
    }
}
