#if canImport(Glibc)
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import Testing
@testable import Workers

/// Refund requests answered by `work` itself (the maintenance loop, with a Server API client), and
/// CONSUMPTION_ANSWER_AFTER_MINUTES read by the executable. The answers themselves (consent, the app's answer, the
/// policy, retries one pass at a time) are RefundRequestTests'.
@Suite("Refund requests answered by work", .serialized, .ownThread)
struct RefundRequestWorkTests {
    /// A bought, credited consumable with a pending CONSUMPTION_REQUEST from a customer who consented.
    static func requested(policy: String? = "grant_prorated") throws -> Harness {
        let h = try RefundRequestTests.bought(policy: policy)
        _ = try h.db.query("SELECT set_customer_consent('user-1', true)")
        _ = try NotificationTests.receive(h, try RefundRequestTests.consumptionRequest())
        try h.drain()
        #expect(try RefundRequestTests.request(h)["state"] == "pending")
        return h
    }

    /// Runs workers (not draining) until `until` holds, at most `seconds`; then stops them.
    static func work(
        _ h: Harness, seconds: Double = 20, serverAPI: Bool = true, _ change: @escaping (inout WorkerConfiguration) -> Void,
        until: () throws -> Bool
    ) throws {
        let threads = try h.startWorkers(1, serverAPI: serverAPI) {
            $0.drain = false
            $0.refundRequestIntervalSeconds = 0.05
            change(&$0)
        }
        defer { for thread in threads { thread.worker.shutdown(); thread.wait(seconds: 10) } }
        let deadline = Date(timeIntervalSinceNow: seconds)
        while try !until(), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    }

    static func state(_ h: Harness) throws -> String? { try RefundRequestTests.request(h)["state"] }

    @Test("work answers after CONSUMPTION_ANSWER_AFTER_MINUTES (0 here) with the policy: the PUT Apple gets is the answer column")
    func policyAnswered() throws {
        let h = try Self.requested(policy: "grant_prorated")
        // Delivered: Apple takes GRANT_PRORATED only with a DELIVERED purchase and its consumption.
        _ = try h.db.query("SELECT mark_verdict_delivered(id) FROM receipt_jobs")
        _ = try h.db.query("SELECT record_consumption('3000000000000001', 30000)")
        try Self.work(h, { $0.consumptionAnswerAfterMinutes = 0 }) { try Self.state(h) != "pending" }
        #expect(try Self.state(h) == "answered")
        let sent = h.fake.consumptionAnswers()
        #expect(sent.count == 1, "sent once")
        let body = try #require(sent.first?.body)
        #expect(sent.first?.transactionId == "3000000000000001")
        #expect(try h.scalar("SELECT answer = $1::jsonb FROM receipt_refund_requests", [body]) == "t")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(answer["refundPreference"] as? String == "GRANT_PRORATED")
        #expect(answer["consumptionPercentage"] as? Int == 30000)
        #expect(answer["customerConsented"] as? Bool == true)
    }

    /// How many times `function` (PL/pgSQL) was called in `h`'s database, by every session, as its statistics say
    /// (`track_functions = 'pl'`, set on the database by `countCalls`; sessions report them once a second at most).
    static func calls(_ h: Harness, _ function: String) throws -> Int {
        Int(try h.scalar("SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = $1", [function])
            ?? "") ?? 0
    }

    /// Counts calls of PL/pgSQL functions in `h`'s database from the next session on.
    static func countCalls(_ h: Harness) throws {
        let name = try #require(try h.scalar("SELECT current_database()"))
        _ = try h.db.query("ALTER DATABASE \(quoteIdentifier(name)) SET track_functions = 'pl'")
    }

    @Test("work waits CONSUMPTION_ANSWER_AFTER_MINUTES for the app; without a Server API client nothing is sent")
    func waits() throws {
        let h = try Self.requested()
        try Self.countCalls(h)
        // With 60 minutes: work's passes ask for the requests due (receipt_refund_requests_due(), counted) and find
        // none; the request is left as it was, not taken.
        let next = try h.scalar("SELECT next_attempt_at::text FROM receipt_refund_requests")
        let before = try Self.calls(h, "receipt_refund_requests_due")
        try Self.work(h, seconds: 60, { $0.consumptionAnswerAfterMinutes = 60 }) {
            try Self.calls(h, "receipt_refund_requests_due") >= before + 2
        }
        #expect(try Self.calls(h, "receipt_refund_requests_due") >= before + 2, "work asked for due requests")
        let request = try RefundRequestTests.request(h)
        #expect(request["state"] == "pending" && request["attempts"] == "0", "\(request)")
        #expect(try h.scalar("SELECT next_attempt_at::text FROM receipt_refund_requests") == next, "never taken")
        // Without a Server API client, work has nothing to send with: it makes no sender at all.
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        let clientless = Worker(
            configuration: Harness.configuration { $0.consumptionAnswerAfterMinutes = 0 }, databaseURL: h.databaseURL,
            client: h.client, signedData: h.signedData, serverAPI: nil, logger: logger
        )
        #expect(clientless.refundRequestSender() == nil)
        let withClient = Worker(
            configuration: Harness.configuration { $0.consumptionAnswerAfterMinutes = 60 }, databaseURL: h.databaseURL,
            client: h.client, signedData: h.signedData, serverAPI: h.serverAPI, logger: logger
        )
        #expect(withClient.refundRequestSender()?.answerAfterMinutes == 60)
        #expect(try Self.state(h) == "pending")
        #expect(h.fake.consumptionAnswers().isEmpty)
    }

    @Test("the app's own answer, given first, is what work sends, not the policy")
    func appAnswerFirst() throws {
        let h = try Self.requested(policy: "decline")
        _ = try h.db.query(
            "SELECT answer_refund_request('3000000000000001', 'UNDELIVERED_SERVER_OUTAGE', 'GRANT_FULL', 0)"
        )
        try Self.work(h, { $0.consumptionAnswerAfterMinutes = 0 }) { try Self.state(h) != "pending" }
        #expect(try Self.state(h) == "answered")
        let body = try #require(h.fake.consumptionAnswers().first?.body)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(answer["refundPreference"] as? String == "GRANT_FULL")
        #expect(answer["deliveryStatus"] as? String == "UNDELIVERED_SERVER_OUTAGE")
        #expect(try h.scalar("SELECT answer = $1::jsonb FROM receipt_refund_requests", [body]) == "t")
        #expect(h.fake.consumptionAnswers().count == 1)
    }

    @Test("work retries a 429 on a later pass; a 5xx whose retry no longer fits before respond_by fails the request")
    func retriedByWork() throws {
        let h = try Self.requested()
        _ = try h.db.query("UPDATE receipt_refund_requests SET respond_by = now() + interval '20 seconds'")
        h.fake.injectAPIFaults([.rateLimited(retryAfterMilliseconds: 100), .internalRetryable])
        try Self.work(h, seconds: 30, { $0.consumptionAnswerAfterMinutes = 0 }) { try Self.state(h) != "pending" }
        let request = try RefundRequestTests.request(h)
        #expect(request["state"] == "failed", "\(request)")
        #expect(request["attempts"] == "2", "the 429 retried, the 5xx's retry (60 s) after respond_by")
        #expect(request["answer"] == "")
        #expect(h.fake.consumptionAnswers().isEmpty)
    }

    @Test("a request taken to be sent is held from other workers until the whole batch could have timed out")
    func heldWhileSent() throws {
        let h = try Self.requested()
        let sender = RefundRequestTests.sender(h, after: 0)
        let taken = try sender.due(h.db)
        #expect(taken.count == 1)
        #expect(try RefundRequestTests.sender(h, after: 0).due(h.db).isEmpty, "not taken twice")
        let held = try #require(
            try h.scalar("SELECT extract(epoch FROM next_attempt_at - now())::integer FROM receipt_refund_requests")
                .flatMap { Int($0) }
        )
        let timeout = h.serverAPI.configuration.timeoutSeconds
        #expect(Double(held) >= Double(sender.batch) * timeout, "held \(held) s for a batch of \(sender.batch)")
        #expect(try sender.record(h.db, try #require(taken.first), sender.send(try #require(taken.first))) == "answered")
    }

    /// The executable: CONSUMPTION_ANSWER_AFTER_MINUTES=0 answers on work's first pass; a value past Apple's 12 hours
    /// is a configuration error naming the setting.
    @Test("receipt-worker work reads CONSUMPTION_ANSWER_AFTER_MINUTES and answers with the Server API key")
    func executable() async throws {
        let h = try Self.requested(policy: "decline")
        let directory = NSTemporaryDirectory() + "rw-refunds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try h.apiKeyPEM.write(toFile: directory + "/key.p8", atomically: true, encoding: .utf8)
        try h.fake.writeRootCertificate(to: directory + "/root.der")
        let settings = [
            "DATABASE_URL": h.databaseURL, "APPSTORE_KEY_ID": Harness.apiKeyID,
            "APPSTORE_ISSUER_ID": Harness.apiIssuerID, "APPSTORE_PRIVATE_KEY_FILE": directory + "/key.p8",
            "APPSTORE_API_URL": h.fake.apiProductionURL, "APPSTORE_SANDBOX_API_URL": h.fake.apiSandboxURL,
            "APPSTORE_ROOT_CERTIFICATES": directory + "/root.der", "APPSTORE_ONLINE_CHECKS": "off",
            "APPLE_BUNDLE_IDS": "com.example.app", "RECEIPT_SOURCE": "api", "APPLE_SHARED_SECRET": "s",
        ]
        for wrong in ["601", "-1", "9223372036854775807"] {  // Int.max: through Double it trapped
            let refused = try ChildProcess(
                ["work"],
                environment: ChildProcess.environment(
                    setting: settings.merging(["CONSUMPTION_ANSWER_AFTER_MINUTES": wrong]) { $1 }
                )
            )
            #expect(await refused.exit(within: 30) == 2, "\(refused.output)")
            #expect(refused.output.contains("CONSUMPTION_ANSWER_AFTER_MINUTES"), "\(refused.output)")
        }
        #expect(try Self.state(h) == "pending")

        let work = try ChildProcess(
            ["work"],
            environment: ChildProcess.environment(
                setting: settings.merging(["CONSUMPTION_ANSWER_AFTER_MINUTES": "0"]) { $1 }
            )
        )
        let deadline = Date(timeIntervalSinceNow: 30)
        while try Self.state(h) == "pending", Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        work.signal(SIGTERM)
        #expect(await work.exit(within: 30) == 0, "\(work.output)")
        #expect(try Self.state(h) == "answered", "\(work.output)")
        let body = try #require(h.fake.consumptionAnswers().first?.body)
        #expect(try h.scalar("SELECT answer = $1::jsonb FROM receipt_refund_requests", [body]) == "t")
        #expect(!work.output.contains("user-1"), "the customer is not logged")
    }
}
#endif
