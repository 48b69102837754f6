import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// Notifications about the app rather than a purchase (RESCIND_CONSENT) carry `appData` in place of `data`: its
/// environment counts as the notification's, for the signature rules of test environments as for the record.
@Suite("Signed data: notifications with appData")
struct AppDataNotificationTests {
    static func notification(
        by signer: Result<JWSSigner, any Error>, data: String? = nil, appData: String?
    ) throws -> String {
        var object: [String: Any] = [
            "notificationType": "RESCIND_CONSENT", "notificationUUID": UUID().uuidString,
            "signedDate": TestEnvironmentTests.nowMs,
        ]
        if let appData {
            object["appData"] = ["bundleId": "com.example.app", "environment": appData]
        }
        if let data {
            object["data"] = ["bundleId": "com.example.app", "environment": data]
        }
        return try TestEnvironmentTests.sign(signer, object)
    }

    @Test("appData's environment is the notification's: signed Production verifies, Xcode is accepted unsigned when allowed")
    func appDataEnvironment() throws {
        let signed = try TestEnvironmentTests.verifier(allowTestEnvironments: false)
            .verifyNotification(try Self.notification(by: TestEnvironmentTests.trusted, appData: "Production"))
        #expect(signed.environment == "Production")
        #expect(signed.bundleId == "com.example.app")
        let xcode = try Self.notification(by: TestEnvironmentTests.untrusted, appData: "Xcode")
        TestEnvironmentTests.expectRefused(try TestEnvironmentTests.verifier(allowTestEnvironments: false), xcode)
        let accepted = try TestEnvironmentTests.verifier(allowTestEnvironments: true).verifyNotification(xcode)
        #expect(accepted.environment == "Xcode")
    }

    @Test("appData naming another environment than data, or signed by an untrusted chain as Production, is refused")
    func mixedOrForged() throws {
        let on = try TestEnvironmentTests.verifier(allowTestEnvironments: true)
        TestEnvironmentTests.expectRefused(
            on, try Self.notification(by: TestEnvironmentTests.untrusted, data: "Xcode", appData: "Production")
        )
        TestEnvironmentTests.expectRefused(
            on, try Self.notification(by: TestEnvironmentTests.untrusted, appData: "Production")
        )
    }
}
