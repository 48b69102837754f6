import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
@testable import Workers

/// Apple's refund requests (CONSUMPTION_REQUEST) from the notification to Send Consumption Information v2 at the fake
/// App Store: real PostgreSQL, notifications signed at test time, the answer sent over loopback with a real JWT.
@Suite("Refund requests", .serialized, .ownThread)
struct RefundRequestTests {
    /// A consumable bought by user-1 (order o-1, transaction 3000000000000001) and credited.
    static func bought(policy: String? = "decline") throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        _ = try h.db.query(
            "INSERT INTO receipt_products (product_id, kind, refund_preference) VALUES ('coins.100', 'consumable', $1)",
            [policy]
        )
        var payload = SignedTransactionTests.Payload(transactionId: "3000000000000001")
        payload.productId = "coins.100"
        _ = try SignedTransactionTests.enqueue(
            h, try SignedTransactionTests.sign(payload), order: "o-1", product: "coins.100"
        )
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
        return h
    }

    static var coins: [String: Any] {
        [
        "transactionId": "3000000000000001", "originalTransactionId": "3000000000000001",
        "bundleId": "com.example.app", "productId": "coins.100", "purchaseDate": Harness.now - 60_000,
        "quantity": 1, "type": "Consumable",
        ]
    }

    /// A notification as Apple signs it (as NotificationTests.Note does), with data.consumptionRequestReason.
    static func notification(
        _ type: String, uuid: String = UUID().uuidString, transaction: [String: Any] = coins, reason: String? = nil
    ) throws -> String {
        let signer = try Harness.signer.get()
        var transaction = transaction
        transaction["environment"] = "Production"
        transaction["signedDate"] = Harness.now
        var data: [String: Any] = [
            "bundleId": "com.example.app", "environment": "Production", "appAppleId": NotificationTests.appAppleId,
            "signedTransactionInfo": try signer.sign(
                JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])
            ),
        ]
        data["consumptionRequestReason"] = reason
        let object: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": Harness.now,
            "data": data,
        ]
        return try signer.sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func consumptionRequest(uuid: String = UUID().uuidString) throws -> String {
        try notification("CONSUMPTION_REQUEST", uuid: uuid, reason: "UNINTENDED_PURCHASE")
    }

    static func sender(_ h: Harness, after minutes: Int = 60, retry: Double = 0.05) -> RefundRequestSender {
        RefundRequestSender(client: h.serverAPI, answerAfterMinutes: minutes, retrySeconds: retry)
    }

    static func request(_ h: Harness) throws -> [String: String] {
        let rows = try h.db.query(
            """
            SELECT state, coalesce(skip_reason, '') AS skip_reason, coalesce(answer::text, '') AS answer,
                   coalesce(outcome, '') AS outcome, user_id, reason, attempts::text AS attempts
            FROM receipt_refund_requests
            """
        )
        #expect(rows.rows.count == 1)
        var request: [String: String] = [:]
        for (index, column) in rows.columns.enumerated() { request[column] = rows.rows.first?[index] ?? nil }
        return request
    }

    @Test("a CONSUMPTION_REQUEST is one pending request with an event; sent twice (same UUID), still one")
    func duplicate() throws {
        let h = try Self.bought()
        let uuid = UUID().uuidString
        _ = try NotificationTests.receive(h, try Self.consumptionRequest(uuid: uuid))
        _ = try NotificationTests.receive(h, try Self.consumptionRequest(uuid: uuid))
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_refund_requests") == "1")
        let request = try Self.request(h)
        #expect(request["state"] == "pending")
        #expect(request["user_id"] == "user-1")
        #expect(request["reason"] == "UNINTENDED_PURCHASE")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'refund_requested'") == "1")
        #expect(
            try NotificationTests.events(h) == ["refund_requested user-1 -"],
            "one event per request, not also consumption_request"
        )
        #expect(
            try h.scalar(
                "SELECT respond_by - to_timestamp($1::bigint / 1000.0) FROM receipt_refund_requests",
                [String(Harness.now)]
            ) == "12:00:00"
        )
    }

    @Test("no consent: skipped no_consent, nothing sent (even with the app's answer)")
    func noConsent() throws {
        let h = try Self.bought()
        _ = try NotificationTests.receive(h, try Self.consumptionRequest())
        try h.drain()
        _ = try h.db.query("SELECT answer_refund_request('3000000000000001', 'DELIVERED', 'DECLINE')")
        let pass = try Self.sender(h).runOnce(h.db)
        #expect(pass == RefundRequestSender.Pass())
        #expect(try Self.request(h)["state"] == "skipped")
        #expect(try Self.request(h)["skip_reason"] == "no_consent")
        #expect(h.fake.consumptionAnswers().isEmpty)

        // Consent withdrawn is no consent either.
        let other = try Self.bought()
        _ = try other.db.query("SELECT set_customer_consent('user-1', false)")
        _ = try NotificationTests.receive(other, try Self.consumptionRequest())
        try other.drain()
        _ = try other.db.query("SELECT answer_refund_request('3000000000000001', 'DELIVERED', 'DECLINE')")
        _ = try Self.sender(other).runOnce(other.db)
        #expect(try Self.request(other)["skip_reason"] == "no_consent")
        #expect(other.fake.consumptionAnswers().isEmpty)
    }

    @Test("the app's own answer wins over the policy and is sent at once, exactly as recorded")
    func appAnswerWins() throws {
        let h = try Self.bought(policy: "decline")
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 25000)")
        _ = try NotificationTests.receive(h, try Self.consumptionRequest())
        try h.drain()
        #expect(try Self.sender(h).runOnce(h.db) == RefundRequestSender.Pass(), "the policy waits an hour")
        #expect(h.fake.consumptionAnswers().isEmpty)

        _ = try h.db.query(
            "SELECT answer_refund_request('3000000000000001', 'undelivered_quality_issue', 'grant_full', 0, true)"
        )
        #expect(try Self.sender(h).runOnce(h.db).answered == 1)
        let sent = try #require(h.fake.consumptionAnswers().first)
        #expect(h.fake.consumptionAnswers().count == 1)
        #expect(sent.transactionId == "3000000000000001")
        #expect(sent.environment == "Production")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(sent.body.utf8)) as? [String: Any])
        #expect(body["refundPreference"] as? String == "GRANT_FULL")
        #expect(body["deliveryStatus"] as? String == "UNDELIVERED_QUALITY_ISSUE")
        #expect(body["consumptionPercentage"] as? Int == 0, "not delivered: consumed 0, as Apple requires")
        #expect(body["customerConsented"] as? Bool == true)
        #expect(body["sampleContentProvided"] as? Bool == true)
        let request = try Self.request(h)
        #expect(request["state"] == "answered")
        #expect(
            try h.scalar("SELECT answer = $1::jsonb FROM receipt_refund_requests", [sent.body]) == "t",
            "answer is exactly what was sent"
        )
        // Answered: nothing more is sent, and a late answer of the app is refused.
        #expect(try Self.sender(h).runOnce(h.db) == RefundRequestSender.Pass())
        #expect(throws: PostgresError.self) {
            try h.db.query("SELECT answer_refund_request('3000000000000001', 'DELIVERED', 'DECLINE')")
        }
        #expect(throws: PostgresError.self) {
            try h.db.query("SELECT answer_refund_request('3000000000000001', 'SHIPPED', 'DECLINE')")
        }

        // Apple decides: REFUND_DECLINED is the outcome.
        _ = try NotificationTests.receive(h, try Self.notification("REFUND_DECLINED"))
        try h.drain()
        #expect(try Self.request(h)["outcome"] == "declined")
        #expect(
            try h.scalar("SELECT requests || '/' || answered || '/' || declined FROM receipt_refund_summary")
                == "1/1/1"
        )
    }

    @Test("the policy answers once the wait is over: DELIVERED (credited, verdict delivered), the recorded consumption")
    func policyAfterWait() throws {
        let h = try Self.bought(policy: "grant_prorated")
        _ = try h.db.query("SELECT mark_verdict_delivered(id) FROM receipt_jobs")
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 40000)")
        _ = try NotificationTests.receive(h, try Self.consumptionRequest())
        try h.drain()
        #expect(try Self.sender(h, after: 60).runOnce(h.db) == RefundRequestSender.Pass())
        #expect(try Self.sender(h, after: 0).runOnce(h.db).answered == 1)
        let sent = try #require(h.fake.consumptionAnswers().first)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(sent.body.utf8)) as? [String: Any])
        #expect(body["refundPreference"] as? String == "GRANT_PRORATED")
        #expect(body["deliveryStatus"] as? String == "DELIVERED")
        #expect(body["consumptionPercentage"] as? Int == 40000)

        // No policy and no answer: skipped no_policy once the wait is over.
        let other = try Self.bought(policy: nil)
        _ = try other.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try NotificationTests.receive(other, try Self.consumptionRequest())
        try other.drain()
        _ = try Self.sender(other, after: 0).runOnce(other.db)
        #expect(try Self.request(other)["skip_reason"] == "no_policy")
        #expect(other.fake.consumptionAnswers().isEmpty)
    }

    @Test("429 and 5xx are retried until respond_by, then the request is failed")
    func retriedThenFailed() throws {
        let h = try Self.bought()
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try NotificationTests.receive(h, try Self.consumptionRequest())
        try h.drain()
        // 10 s, so that a loaded machine still has time for two retries before respond_by (3 s was tight); faults
        // enough for every call until then.
        _ = try h.db.query("UPDATE receipt_refund_requests SET respond_by = now() + interval '10 seconds'")
        h.fake.injectAPIFaults(
            Array(repeating: [.rateLimited(retryAfterMilliseconds: 50), .internalRetryable], count: 600).flatMap { $0 }
        )
        let sender = Self.sender(h, after: 0, retry: 0.05)
        var retried = 0
        let deadline = Date().addingTimeInterval(30)
        while try Self.request(h)["state"] == "pending", Date() < deadline {
            retried += try sender.runOnce(h.db).retried
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(retried >= 2, "retried before giving up")
        let request = try Self.request(h)
        #expect(request["state"] == "failed")
        #expect(request["answer"] == "")
        #expect(h.fake.consumptionAnswers().isEmpty)
        #expect(try h.scalar("SELECT now() >= respond_by - interval '1 second' FROM receipt_refund_requests") == "t")
    }
}
