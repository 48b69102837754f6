import FakeAppStore
import Foundation
import Workers
import PostgresClient
import ReceiptQueue
import Testing

/// Apple giving no verdict: retried with backoff until it answers, dead letters when it never does, our own
/// configuration errors never charged to the purchase.
@Suite("Retries, faults and dead letters", .serialized, .ownThread)
struct RetryTests {
    @Test("21005, an HTML 503, a truncated body and a timeout, then success: verified after five attempts")
    func faultsThenSuccess() throws {
        // A 5 s timeout, so that no ordinary answer on a loaded machine costs an attempt (0.5 s did); the hang
        // (10 s) still outlasts it.
        let h = try Harness(
            fakeConfiguration: FakeAppStoreConfiguration(hangSeconds: 10), timeoutSeconds: 5
        )
        let receipt = Harness.receipt(
            purchases: [Harness.purchase("f-1")], faults: [.status21005, .html503, .truncated, .hang]
        )
        let id = try h.enqueue(receipt, order: "flaky")
        try h.drain()
        let job = try h.job(id)
        #expect(job["state"] == "verified")
        #expect(job["attempts"] == "5")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    @Test("a job Apple never answers ends dead after MAX_ATTEMPTS with its last error kept")
    func deadAfterMaxAttempts() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("d-1")], faults: Array(repeating: .status21009, count: 20))
        let id = try h.enqueue(receipt, order: "never")
        try h.drain { $0.retry.maxAttempts = 4 }
        let job = try h.job(id)
        #expect(job["state"] == "dead")
        #expect(job["reason"] == "retries_exhausted")
        #expect(job["attempts"] == "4")
        #expect(job["last_error"]?.contains("21009") == true)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs_stuck WHERE id = $1 AND problem = 'dead'", [String(id)]) == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
    }

    /// Rule 1: one redirect per attempt. A sandbox receipt sent to production gets 21007; the sandbox then answering
    /// 21008 would send it back, which the client refuses: no verdict, the attempt is charged, the job retried.
    @Test("a second redirect (21007, then 21008) is no verdict: retried until dead, two calls per attempt, nothing credited")
    func secondRedirectIsARetry() throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.redirectLoopReceipt("rl-1"), order: "redirect-loop")
        try h.drain { $0.retry.maxAttempts = 3 }
        let job = try h.job(id)
        #expect(job["state"] == "dead", "\(job)")
        #expect(job["attempts"] == "3")
        #expect(job["last_error"]?.contains("second redirect") == true, "\(job)")
        let stats = h.fake.stats()
        #expect(stats.count("production", "21007") == 3, "\(stats)")
        #expect(stats.count("sandbox", "21008") == 3, "\(stats)")
        #expect(stats.total == 6, "more than two calls in an attempt: \(stats)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
    }

    @Test("21002 is retried, then rejected invalid_receipt")
    func malformedDataThenInvalid() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("m-1")], status: 21002)
        let id = try h.enqueue(receipt, order: "garbled")
        try h.drain()
        #expect(try h.job(id)["reason"] == "invalid_receipt")
        #expect(try h.job(id)["attempts"] == "3")
    }

    @Test("a wrong shared secret (21004) never rejects the purchase and costs no attempt")
    func configurationErrorCostsNothing() throws {
        let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(sharedSecret: "the-real-secret"))
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("c-1")]), order: "secret")
        let worker = Worker(
            configuration: Harness.configuration { $0.drain = false },
            databaseURL: h.databaseURL, client: h.client, logger: .init(label: "quiet")
        )
        let thread = try WorkerThread(worker)
        // Apple has refused our configuration at least twice: the job waited and came back, costing nothing.
        let refusedTwice = try h.waitUntil(60) { (h.fake.stats().statuses["production"]?["21004"] ?? 0) >= 2 }
        #expect(thread.stop(waitingUpTo: 30))
        #expect(thread.error == nil, "the worker failed: \(String(describing: thread.error))")
        #expect(refusedTwice)
        let job = try h.job(id)
        #expect(["retry", "queued"].contains(job["state"]))
        #expect(job["attempts"] == "0")
        #expect(job["apple_status"] == "21004")
        #expect((h.fake.stats().statuses["production"]?["21004"] ?? 0) >= 2)
    }

    @Test("malformed receipts are rejected at enqueue, without reaching Apple")
    func malformedInput() throws {
        let h = try Harness()
        let bad = ["", "   \n", "not base64!", String(repeating: "QUFB", count: 300_000)]
        let ids = try bad.enumerated().map { try h.enqueue($1, order: "bad-\($0)") }
        for id in ids {
            #expect(try h.job(id)["state"] == "rejected")
            #expect(try h.job(id)["reason"] == "malformed_input")
        }
        // A row inserted directly (bypassing enqueue_receipt) is caught by the worker.
        _ = try h.db.query(
            "INSERT INTO receipt_jobs (bundle_id, order_id, user_id, product_id, receipt_data) VALUES ('com.example.app', 'direct', 'u', 'p', $1)",
            ["%%%%"]
        )
        try h.drain()
        #expect(try h.scalar("SELECT reason FROM receipt_jobs WHERE order_id = 'direct'") == "malformed_input")
        #expect(h.fake.stats().total == 0)
    }
}
