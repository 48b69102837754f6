import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing
@testable import Workers

/// Attack 4 of issue 22 against a real PostgreSQL: with APPSTORE_ALLOW_TEST_ENVIRONMENTS on, data that claims a
/// test environment somewhere and Production (or nothing) elsewhere is not taken unsigned, and test-environment data
/// that is accepted stays in its own environment, away from Production and Sandbox rows.
@Suite("Signed data attacks end to end", .serialized, .ownThread)
struct SignedDataAttackTests {
    /// A chain the workers do not trust: what "unsigned" data is signed with (its signature proves nothing).
    static let stranger = Result { try JWSSigner(chain: SigningChain()) }

    /// The workers' verifier with test environments allowed (the attack's setting), trusting the harness's chains.
    static func allowingTestEnvironments(_ h: Harness) throws -> SignedDataVerifier {
        SignedDataVerifier(
            configuration: .init(
                rootCertificates: [try Harness.signer.get().chain.root, h.fake.signingChain.root], onlineChecks: false,
                allowTestEnvironments: true
            )
        )
    }

    /// Runs one worker with `verifier` until every job and notification is final.
    static func drain(_ h: Harness, _ verifier: SignedDataVerifier, _ change: (inout WorkerConfiguration) -> Void = { _ in }) throws {
        let threads = try h.startWorkers(1, signedData: verifier, change)
        guard threads.allSatisfy({ $0.wait(seconds: 60) }) else {
            throw Harness.giveUp(threads, reason: "workers did not drain within 60 s")
        }
        try Harness.rethrow(threads)
    }

    /// A notification about `transaction`, "signed" by the stranger: `top` is a top-level environment (notifications
    /// have none), `data` the notification's, and the nested transaction's own `environment` and `data.environment`.
    static func unsigned(
        type: String, top: String?, data: String?, transaction: [String: Any], nestedEnvironment: String?,
        nestedData: String?
    ) throws -> String {
        var nested = transaction
        nested["environment"] = nestedEnvironment
        if let nestedData { nested["data"] = ["environment": nestedData] }
        nested["signedDate"] = Harness.now
        let signer = try stranger.get()
        var body: [String: Any] = [
            "bundleId": "com.example.app", "appAppleId": NotificationTests.appAppleId,
            "signedTransactionInfo": try signer.sign(JSONSerialization.data(withJSONObject: nested, options: [.sortedKeys])),
        ]
        body["environment"] = data
        var object: [String: Any] = [
            "notificationType": type, "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": Harness.now + 1000, "data": body,
        ]
        object["environment"] = top
        return try signer.sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    @Test("attack 4: an unsigned REFUND saying Xcode at the top and Production in data leaves the Production credit unrevoked")
    func mixedRefund() throws {
        let h = try NotificationTests.subscribed()
        let start = Harness.now - 60_000
        let period = NotificationTests.period("2000000000000000", wol: "", start: start, revokedAt: Harness.now)
        let attacks = [
            try Self.unsigned(type: "REFUND", top: "Xcode", data: "Production", transaction: period,
                              nestedEnvironment: nil, nestedData: "Xcode"),
            try Self.unsigned(type: "REFUND", top: "Xcode", data: "Production", transaction: period,
                              nestedEnvironment: "Production", nestedData: nil),
            try Self.unsigned(type: "REFUND", top: nil, data: "Production", transaction: period,
                              nestedEnvironment: "Xcode", nestedData: nil),
        ]
        let ids = try attacks.map { try NotificationTests.receive(h, $0) }
        try Self.drain(h, try Self.allowingTestEnvironments(h))
        for id in ids {
            #expect(try NotificationTests.state(h, id)?.hasPrefix("rejected") == true, "\(id)")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE revoked_at IS NOT NULL") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_revocations") == "0")
    }

    @Test("attack 4: an unsigned mixed-environment DID_RENEW credits nothing in Production")
    func mixedRenewal() throws {
        let h = try NotificationTests.subscribed()
        let renewal = NotificationTests.period("2000000000000001", wol: "2000000000000101", start: Harness.now - 1000)
        let id = try NotificationTests.receive(
            h,
            try Self.unsigned(type: "DID_RENEW", top: "Xcode", data: "Production", transaction: renewal,
                              nestedEnvironment: nil, nestedData: "Xcode")
        )
        try Self.drain(h, try Self.allowingTestEnvironments(h))
        #expect(try NotificationTests.state(h, id)?.hasPrefix("rejected") == true)
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE transaction_id = '2000000000000001'") == "0")
    }

    @Test("test data accepted unsigned stays in its environment: an Xcode REFUND revokes no Sandbox credit of the same id")
    func xcodeRefundOwnEnvironment() throws {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        var sandbox = SignedTransactionTests.Payload(transactionId: "2000000000000000")
        sandbox.environment = "Sandbox"
        _ = try SignedTransactionTests.enqueue(h, try SignedTransactionTests.sign(sandbox), order: "o-1")
        try h.drain()
        #expect(try h.scalar("SELECT environment FROM receipt_transactions") == "Sandbox")

        let period = NotificationTests.period("2000000000000000", wol: "", start: Harness.now - 60_000, revokedAt: Harness.now)
        let id = try NotificationTests.receive(
            h,
            try Self.unsigned(type: "REFUND", top: nil, data: "Xcode", transaction: period,
                              nestedEnvironment: "Xcode", nestedData: nil)
        )
        try Self.drain(h, try Self.allowingTestEnvironments(h))
        #expect(try NotificationTests.state(h, id) == "applied")
        #expect(try h.scalar("SELECT environment FROM receipt_notifications WHERE id = $1", [String(id)]) == "Xcode")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE revoked_at IS NOT NULL") == "0")
    }

    @Test("an Xcode signed transaction is credited as Xcode: neither already_credited by nor crediting the Sandbox purchase of the same id")
    func xcodeTransactionOwnEnvironment() throws {
        let h = try Harness()
        var sandbox = SignedTransactionTests.Payload(transactionId: "3000000000000000")
        sandbox.environment = "Sandbox"
        let first = try SignedTransactionTests.enqueue(h, try SignedTransactionTests.sign(sandbox), order: "o-1")
        try h.drain()
        #expect(try h.job(first)["state"] == "verified")

        var xcode = sandbox
        xcode.environment = "Xcode"
        let second = try SignedTransactionTests.enqueue(
            h, try SignedTransactionTests.sign(xcode, by: try Self.stranger.get()), order: "o-2", user: "user-2"
        )
        try Self.drain(h, try Self.allowingTestEnvironments(h))
        let job = try h.job(second)
        #expect(job["state"] == "verified", "\(job)")
        #expect(job["environment"] == "Xcode")
        #expect(
            try h.db.query("SELECT environment || ' ' || user_id FROM receipt_transactions ORDER BY id").rows
                .map { $0[0] ?? "" } == ["Sandbox user-1", "Xcode user-2"]
        )
        // Refused as sandbox data is under SANDBOX_POLICY=reject.
        let third = try SignedTransactionTests.enqueue(
            h, try SignedTransactionTests.sign(xcode, by: try Self.stranger.get()), order: "o-3", user: "user-3"
        )
        try Self.drain(h, try Self.allowingTestEnvironments(h)) { $0.rules.sandboxPolicy = .reject }
        #expect(try h.job(third)["reason"] == "sandbox_not_allowed")
    }

    @Test("SANDBOX_POLICY=reject refuses Sandbox and Xcode notifications, applies Production ones")
    func sandboxPolicyReject() throws {
        let h = try NotificationTests.subscribed()
        var sandbox = NotificationTests.Note(type: "TEST")
        sandbox.environment = "Sandbox"
        let sandboxId = try NotificationTests.receive(h, try sandbox.signed())
        let xcodeId = try NotificationTests.receive(
            h,
            try Self.unsigned(type: "TEST", top: nil, data: "Xcode",
                              transaction: NotificationTests.period("1", wol: "", start: Harness.now),
                              nestedEnvironment: "Xcode", nestedData: nil)
        )
        let production = try NotificationTests.receive(h, try NotificationTests.Note(type: "TEST").signed())
        try Self.drain(h, try Self.allowingTestEnvironments(h)) { $0.rules.sandboxPolicy = .reject }
        #expect(try NotificationTests.state(h, sandboxId) == "rejected:sandbox_not_allowed")
        #expect(try NotificationTests.state(h, xcodeId) == "rejected:sandbox_not_allowed")
        #expect(try NotificationTests.state(h, production) == "applied")
    }

    @Test("online checks whose OCSP responder cannot be reached leave a notification to retry, not rejected")
    func ocspUnreachableNotification() throws {
        let h = try NotificationTests.subscribed()
        var options = SigningChain.Options()
        options.leafOCSPURL = "http://127.0.0.1:9/ocsp"
        options.intermediateOCSPURL = "http://127.0.0.1:9/ocsp"
        let signer = try JWSSigner(chain: SigningChain(options))
        let id = try NotificationTests.receive(h, try NotificationTests.Note(type: "TEST").signed(by: signer))
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: true),
            ocsp: OCSPClient { _, _ in throw CocoaError(.fileNoSuchFile) }
        )
        let threads = try h.startWorkers(1, signedData: verifier) { $0.drain = false }
        defer {
            for thread in threads { thread.worker.shutdown() }
            for thread in threads { _ = thread.wait(seconds: 10) }
        }
        #expect(try h.waitUntil(30) { try NotificationTests.state(h, id) == "retry" })
        #expect(try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(id)])?
            .contains("OCSP") == true)
    }
}
