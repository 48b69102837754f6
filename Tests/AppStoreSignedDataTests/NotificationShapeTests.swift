import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// Notifications without `data` (issue 38): the app and environment come from `summary` (RENEWAL_EXTENSION SUMMARY)
/// or `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN, whose environment is its id's `SANDBOX` prefix), in Apple's
/// order (data, summary, externalPurchaseToken, appData), as Apple's SignedDataVerifier reads them; none of them is
/// the shape `unknown`. Shapes from Apple's own test resources (app-store-server-library-swift), signed here.
@Suite("Signed data: notification shapes")
struct NotificationShapeTests {
    static func notification(
        by signer: Result<JWSSigner, any Error> = TestEnvironmentTests.trusted, _ fields: [String: Any]
    ) throws -> String {
        var object: [String: Any] = [
            "notificationType": "RENEWAL_EXTENSION", "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": TestEnvironmentTests.nowMs,
        ]
        object.merge(fields) { $1 }
        return try TestEnvironmentTests.sign(signer, object)
    }

    static func summary(environment: String) -> [String: Any] {
        [
            "subtype": "SUMMARY",
            "summary": [
                "environment": environment, "appAppleId": 41234, "bundleId": "com.example", "productId": "com.example.product",
                "requestIdentifier": "efb27071-45a4-4aca-9854-2a1e9146f265", "storefrontCountryCodes": ["CAN", "USA", "MEX"],
                "succeededCount": 5, "failedCount": 2,
            ] as [String: Any],
        ]
    }

    static func token(_ id: String, extra: [String: Any] = [:]) -> [String: Any] {
        var fields: [String: Any] = [
            "notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED",
            "externalPurchaseToken": [
                "externalPurchaseId": id, "tokenCreationDate": 1_698_148_950_000, "appAppleId": 55555,
                "bundleId": "com.example",
            ] as [String: Any],
        ]
        fields.merge(extra) { $1 }
        return fields
    }

    @Test("summary: the app, environment, request, product, storefronts and counts are read from it")
    func summary() throws {
        let verifier = try TestEnvironmentTests.verifier(allowTestEnvironments: false)
        let note = try verifier.verifyNotification(try Self.notification(Self.summary(environment: "Sandbox")))
        #expect(note.shape == .summary)
        #expect(note.environment == "Sandbox")
        #expect(note.bundleId == "com.example")
        #expect(note.appAppleId == 41234)
        #expect(note.summary?.requestIdentifier == "efb27071-45a4-4aca-9854-2a1e9146f265")
        #expect(note.summary?.productId == "com.example.product")
        #expect(note.summary?.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(note.summary?.succeededCount == 5)
        #expect(note.summary?.failedCount == 2)
    }

    @Test("summary in LocalTesting (Apple's own resource): unsigned accepted only when test environments are")
    func summaryLocalTesting() throws {
        let payload = try Self.notification(by: TestEnvironmentTests.untrusted, Self.summary(environment: "LocalTesting"))
        TestEnvironmentTests.expectRefused(try TestEnvironmentTests.verifier(allowTestEnvironments: false), payload)
        let note = try TestEnvironmentTests.verifier(allowTestEnvironments: true).verifyNotification(payload)
        #expect(note.environment == "LocalTesting")
        // A summary that claims Production but is signed by nobody trusted stays refused.
        TestEnvironmentTests.expectRefused(
            try TestEnvironmentTests.verifier(allowTestEnvironments: true),
            try Self.notification(by: TestEnvironmentTests.untrusted, Self.summary(environment: "Production"))
        )
    }

    @Test("externalPurchaseToken: Production, or Sandbox for an id starting SANDBOX; its app from the token")
    func externalPurchaseToken() throws {
        let verifier = try TestEnvironmentTests.verifier(allowTestEnvironments: true)
        let production = try verifier.verifyNotification(
            try Self.notification(Self.token("b2158121-7af9-49d4-9561-1f588205523e"))
        )
        #expect(production.shape == .externalPurchaseToken)
        #expect(production.environment == "Production")
        #expect(production.bundleId == "com.example")
        #expect(production.appAppleId == 55555)
        #expect(production.externalPurchaseToken?.externalPurchaseId == "b2158121-7af9-49d4-9561-1f588205523e")
        #expect(production.externalPurchaseToken?.tokenCreationDateMs == 1_698_148_950_000)
        let sandbox = try verifier.verifyNotification(
            try Self.notification(Self.token("SANDBOX_b2158121-7af9-49d4-9561-1f588205523e"))
        )
        #expect(sandbox.environment == "Sandbox")
    }

    @Test("externalPurchaseToken with an environment beside it (Xcode, unsigned) is refused, never taken unsigned")
    func externalPurchaseTokenClaimingXcode() throws {
        let verifier = try TestEnvironmentTests.verifier(allowTestEnvironments: true)
        TestEnvironmentTests.expectRefused(
            verifier,
            try Self.notification(
                by: TestEnvironmentTests.untrusted, Self.token("x", extra: ["environment": "Xcode"])
            )
        )
        // Unsigned, without any environment, it is verified, and fails as any forgery.
        TestEnvironmentTests.expectRefused(
            verifier, try Self.notification(by: TestEnvironmentTests.untrusted, Self.token("x"))
        )
    }

    @Test("data wins over summary (Apple's order); a payload with none of the four is the unknown shape")
    func order() throws {
        let verifier = try TestEnvironmentTests.verifier(allowTestEnvironments: false)
        var fields = Self.summary(environment: "Production")
        fields["data"] = ["bundleId": "com.example.app", "environment": "Production", "appAppleId": 1]
        let both = try verifier.verifyNotification(try Self.notification(fields))
        #expect(both.shape == .data)
        #expect(both.bundleId == "com.example.app")
        #expect(both.summary == nil)
        let unknown = try verifier.verifyNotification(try Self.notification(["somethingNew": ["a": 1]]))
        #expect(unknown.shape == .unknown)
        #expect(unknown.bundleId == nil)
        #expect(unknown.environment == nil)
    }

    @Test("counts and dates that are not whole numbers in range are malformed, not trapped")
    func hostileNumbers() throws {
        let verifier = try TestEnvironmentTests.verifier(allowTestEnvironments: false)
        let fields: [String: Any] = [
            "subtype": "SUMMARY",
            "summary": ["environment": "Production", "bundleId": "b", "succeededCount": 1e300] as [String: Any],
        ]
        TestEnvironmentTests.expectRefused(verifier, try Self.notification(fields))
        var token = Self.token("x")
        token["externalPurchaseToken"] = ["externalPurchaseId": "x", "tokenCreationDate": -1e300, "bundleId": "b"]
        TestEnvironmentTests.expectRefused(verifier, try Self.notification(token))
    }
}
