import AppStoreSignedData
import AppleFixtureFiles
import FakeAppStore
import Foundation
import Synchronization
import Testing
@testable import Workers

/// Attacks 5 and 7 of issue 22 end to end, against a real PostgreSQL and a worker: a validly signed notification
/// whose numbers do not fit (it used to end every worker that claimed it), and a real Apple-signed notification with
/// one signature byte changed while no OCSP responder can be reached (it used to be retried on OCSP until `dead`).
@Suite("Hostile signed data end to end", .serialized, .ownThread)
struct HostileSignedDataTests {
    /// The harness's own trusted chain signing `object` as JSON (numbers written as JSONSerialization writes them).
    static func signed(_ object: [String: Any]) throws -> String {
        try Harness.signer.get().sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func notification(type: String, data: [String: Any]) throws -> String {
        try signed([
            "notificationType": type, "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": Harness.now, "data": data,
        ])
    }

    @Test("attack 5: signed notifications carrying 1e300 where Apple puts an integer are rejected; the worker lives on")
    func hugeNumbers() throws {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        let renewal = try Self.signed([
            "originalTransactionId": "2000000000000000", "autoRenewProductId": "pro.monthly", "autoRenewStatus": 1,
            "environment": "Sandbox", "signedDate": Harness.now, "gracePeriodExpiresDate": 1e300,
        ])
        let transaction = try Self.signed([
            "transactionId": "2000000000000000", "originalTransactionId": "2000000000000000",
            "bundleId": "com.example.app", "productId": "pro.monthly", "purchaseDate": Harness.now - 1000,
            "type": "Auto-Renewable Subscription", "environment": "Sandbox", "signedDate": Harness.now,
        ])
        let hostile = [
            try Self.notification(
                type: "DID_CHANGE_RENEWAL_STATUS",
                data: [
                    "bundleId": "com.example.app", "appAppleId": NotificationTests.appAppleId, "environment": "Sandbox",
                    "signedTransactionInfo": transaction, "signedRenewalInfo": renewal,
                ]
            ),
            try Self.notification(
                type: "TEST", data: ["bundleId": "com.example.app", "appAppleId": 1e300, "environment": "Sandbox"]
            ),
        ]
        let genuine = try Self.notification(
            type: "TEST",
            data: ["bundleId": "com.example.app", "appAppleId": NotificationTests.appAppleId, "environment": "Sandbox"]
        )
        let hostileIds = try hostile.map { try NotificationTests.receive(h, $0) }
        let genuineId = try NotificationTests.receive(h, genuine)
        try SignedDataAttackTests.drain(h, h.signedData)
        for id in hostileIds {
            #expect(try NotificationTests.state(h, id)?.hasPrefix("rejected") == true, "\(id)")
            #expect(try h.scalar("SELECT attempts FROM receipt_notifications WHERE id = $1", [String(id)]) == "1")
        }
        #expect(try NotificationTests.state(h, genuineId) == "applied")
    }

    @Test(
        "attack 7: a real Apple-signed notification with a changed signature byte is rejected for its signature",
        .needsAppleFixtures
    )
    func tamperedAppleSignature() throws {
        let original = try AppleFixtureFiles.appleTestNotification()
        let h = try Harness()
        let tamperedId = try NotificationTests.receive(h, try Self.flipSignatureByte(original))
        // Production's wiring: Apple's pinned root, online checks, and OCSP that cannot be reached. (Apple's own
        // certificates in this notification have expired since: checked after the signature, they would reject it
        // too, so the error must name the signature.)
        let ocsp = Counter()
        let verifier = SignedDataVerifier(
            configuration: .init(onlineChecks: true), ocsp: OCSPClient { _, _ in ocsp.add(); throw Unreachable() }
        )
        try SignedDataAttackTests.drain(h, verifier)
        #expect(try NotificationTests.state(h, tamperedId) == "rejected:invalid_signature")
        let error = try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(tamperedId)])
        #expect(error?.contains("ES256 signature") == true, "\(error ?? "nil")")
        #expect(ocsp.value == 0)
    }

    /// A TEST notification signed by a chain of its own whose certificates name OCSP responders at `responders`
    /// (`…/leaf`, `…/intermediate`): the signer (its root to trust) and the JWS.
    static func notification(respondersAt responders: String) throws -> (signer: JWSSigner, jws: String) {
        var options = SigningChain.Options()
        options.leafOCSPURL = responders + "/leaf"
        options.intermediateOCSPURL = responders + "/intermediate"
        let signer = try JWSSigner(chain: SigningChain(options))
        let jws = try signer.sign(
            JSONSerialization.data(
                withJSONObject: [
                    "notificationType": "TEST", "notificationUUID": UUID().uuidString, "version": "2.0",
                    "signedDate": Harness.now,
                    "data": ["bundleId": "com.example.app", "environment": "Sandbox"] as [String: Any],
                ] as [String: Any],
                options: [.sortedKeys]
            )
        )
        return (signer, jws)
    }

    @Test("attack 7: online, OCSP unreachable: a changed signature byte is rejected at once, the genuine one retried")
    func tamperedSignatureOnline() throws {
        let (signer, genuine) = try Self.notification(respondersAt: "http://127.0.0.1:9")
        let h = try Harness()
        let tamperedId = try NotificationTests.receive(h, try Self.flipSignatureByte(genuine))
        let genuineId = try NotificationTests.receive(h, genuine)
        let ocsp = Counter()
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: true),
            ocsp: OCSPClient { _, _ in ocsp.add(); throw Unreachable() }
        )
        let threads = try h.startWorkers(1, signedData: verifier) { $0.drain = false }
        defer { for thread in threads { _ = thread.stop(waitingUpTo: 10) } }
        let settled = try h.waitUntil(30) {
            try [tamperedId, genuineId].allSatisfy { id in
                try !["queued", "running"].contains(NotificationTests.state(h, id) ?? "queued")
            }
        }
        #expect(settled)
        #expect(try NotificationTests.state(h, tamperedId) == "rejected:invalid_signature")
        #expect(try h.scalar("SELECT attempts FROM receipt_notifications WHERE id = $1", [String(tamperedId)]) == "1")
        // The genuine one reaches OCSP, which cannot answer: no verdict, tried again later.
        #expect(try NotificationTests.state(h, genuineId)?.hasPrefix("retry") == true)
        #expect(ocsp.value >= 1)
    }

    static func flipSignatureByte(_ jws: String) throws -> String {
        let parts = jws.split(separator: ".").map(String.init)
        var signature = try #require(Base64URL.decode(Substring(parts[2])))
        signature[10] ^= 0x01
        return parts[0] + "." + parts[1] + "." + JWSSigner.base64URL(signature)
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    struct Unreachable: Error {}
}
