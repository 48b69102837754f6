import AppStoreClient
import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Synchronization
import Testing

/// The scheduler's SQL and the operators' tools: sweeps, requeue with an audit trail, retention.
@Suite("Scheduler and operations", .serialized, .ownThread)
struct SchedulerTests {
    @Test("two sweepers at once rescue each expired lease exactly once")
    func concurrentSweepers() throws {
        let h = try Harness()
        for index in 0..<200 {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("sw-\(index)")]), order: "sweep-\(index)")
        }
        #expect(try h.store.claim(worker: "gone", limit: 200, leaseSeconds: 0.1).count == 200)
        #expect(try h.waitUntil(60) { try h.leasesRunOut() })
        let url = h.databaseURL
        let rescued = Mutex(0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            do {
                let store = try JobStore(url: url)
                defer { store.connection.close() }
                for _ in 0..<20 {
                    let pass = try store.sweep(maxAttempts: 10, limit: 17)
                    rescued.withLock { $0 += pass.rescued }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "a sweeper failed: \(failures.withLock { $0 })")
        #expect(rescued.withLock { $0 } == 200)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'queued' AND rescues = 1") == "200")
    }

    @Test("requeue puts a dead job back with fresh attempts and records who did it; verified jobs are refused")
    func requeue() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("rq-1")], faults: Array(repeating: .status21005, count: 3))
        let id = try h.enqueue(receipt, order: "requeue")
        try h.drain { $0.retry.maxAttempts = 2 }
        #expect(try h.job(id)["state"] == "dead")
        #expect(try h.store.requeueDead(note: "after the outage") == 1)
        #expect(try h.job(id)["state"] == "queued")
        #expect(try h.job(id)["attempts"] == "0")
        #expect(try h.scalar("SELECT action || ':' || job_id || ':' || (detail LIKE 'was dead%after the outage%') FROM receipt_admin_log") == "requeue:\(id):true")
        try h.drain { $0.retry.maxAttempts = 5 }
        #expect(try h.job(id)["state"] == "verified")
        let refused = #expect(throws: PostgresError.self) { try h.store.requeue(jobId: id, note: nil) }
        #expect(refused?.message.contains("verified") == true)
        #expect(throws: PostgresError.self) { try h.store.requeue(jobId: 999_999, note: nil) }
    }

    @Test("retention clears old receipts, deletes delivered verdicts in batches, and never touches the ledger")
    func retention() throws {
        let h = try Harness()
        var ids: [Int64] = []
        for index in 0..<12 {
            ids.append(try h.enqueue(Harness.receipt(purchases: [Harness.purchase("ret-\(index)")]), order: "ret-\(index)"))
        }
        try h.drain()
        for id in ids.prefix(5) { _ = try h.scalar("SELECT mark_verdict_delivered($1)", [String(id)]) }
        _ = try h.db.query("UPDATE receipt_jobs SET finished_at = now() - interval '40 days'")
        var pruned = 0
        while true {
            let count = try h.store.prune(clearReceiptsAfterSeconds: 7 * 86_400, deleteAfterSeconds: 30 * 86_400, batch: 4)
            if count == 0 { break }
            pruned += count
        }
        #expect(pruned >= 12)   // a delivered job may be deleted before its receipt was cleared
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "7")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE receipt_data IS NOT NULL") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE receipt_hash IS NULL") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "12")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE job_id IS NULL") == "5")
    }

    /// Jobs that stay (receipts already cleared, undelivered verdicts, dead letters) pile up over retention's periods;
    /// a call must not read them again to find the few it has to clear or delete.
    @Test("retention reads only the jobs it clears or deletes, not the many it already cleared or must keep")
    func retentionReadsOnlyItsWork() throws {
        let h = try Harness()
        // 20,000 old jobs retention has nothing more to do for: receipts cleared; undelivered, dead or recent.
        _ = try h.db.query("""
            INSERT INTO receipt_jobs (state, bundle_id, order_id, user_id, product_id, receipt_data, finished_at,
                                      delivered_at)
            SELECT CASE WHEN n % 2 = 0 THEN 'verified' ELSE 'dead' END, 'com.example.app', 'kept-' || n, 'u', 'p',
                   NULL, now() - interval '60 days', CASE WHEN n % 4 = 0 THEN now() - interval '10 days' END
            FROM generate_series(1, 20000) AS n
            """)
        // Three to clear (finished 60 days ago, receipts still there, undelivered) and two to delete (delivered).
        _ = try h.db.query("""
            INSERT INTO receipt_jobs (state, bundle_id, order_id, user_id, product_id, receipt_data, finished_at,
                                      delivered_at)
            SELECT 'verified', 'com.example.app', 'work-' || n, 'u', 'p', CASE WHEN n <= 3 THEN 'cmVjZWlwdA==' END,
                   now() - interval '120 days', CASE WHEN n > 3 THEN now() - interval '100 days' END
            FROM generate_series(1, 5) AS n
            """)
        _ = try h.db.query("ANALYZE receipt_jobs")

        _ = try h.db.query("BEGIN")
        let pruned = try h.store.prune(clearReceiptsAfterSeconds: 30 * 86_400, deleteAfterSeconds: 90 * 86_400, batch: 5_000)
        // This transaction's own reads of receipt_jobs, by sequential and index scans.
        let read = try h.scalar("""
            SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relname = 'receipt_jobs'
            """)
        _ = try h.db.query("COMMIT")
        #expect(pruned == 3 + 2)
        #expect(Int(read ?? "") ?? .max <= 10, "retention read \(read ?? "?") jobs to clear 3 receipts and delete 2 jobs")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE receipt_data IS NOT NULL") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "20003")
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 30 * 86_400, deleteAfterSeconds: 90 * 86_400, batch: 5_000) == 0)
    }

    @Test("retention deletes old delivered events and finished notifications; keeps undelivered, dead, and 180 days of notifications")
    func retentionOfEventsAndNotifications() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'old-delivered', now() - interval '100 days', now() - interval '99 days'),
                ('revoked', 'old-undelivered', now() - interval '100 days', NULL),
                ('renewed', 'recent-delivered', now() - interval '10 days', now() - interval '9 days')
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, signed_payload, payload_hash, finished_at)
            SELECT s.state, 'payload-' || s.label, encode(sha256(convert_to(s.label, 'UTF8')), 'hex'), s.finished_at
            FROM (VALUES ('applied', 'applied-200', now() - interval '200 days'),
                         ('rejected', 'rejected-200', now() - interval '200 days'),
                         ('duplicate', 'duplicate-200', now() - interval '200 days'),
                         ('applied', 'applied-100', now() - interval '100 days'),
                         ('dead', 'dead-200', now() - interval '200 days'),
                         ('queued', 'queued', NULL)) AS s(state, label, finished_at)
            """)
        // Purchases kept unclaimed (issue 37): one credited 200 days ago goes with the notifications; one credited
        // 100 days ago and one still waiting for its customer, however old, stay.
        _ = try h.db.query("""
            INSERT INTO receipt_unclaimed (environment, bundle_id, product_id, transaction_id, original_transaction_id,
                                           source, purchase, first_seen, claimed_at)
            SELECT 'Production', 'com.example.app', 'coins.100', s.id, s.id, 'notification', '{}', s.seen, s.claimed
            FROM (VALUES ('claimed-200', now() - interval '300 days', now() - interval '200 days'),
                         ('claimed-100', now() - interval '300 days', now() - interval '100 days'),
                         ('waiting-300', now() - interval '300 days', NULL)) AS s(id, seen, claimed)
            """)
        var pruned = 0
        while true {
            let count = try h.store.prune(clearReceiptsAfterSeconds: 30 * 86_400, deleteAfterSeconds: 90 * 86_400, batch: 1)
            if count == 0 { break }
            pruned += count
        }
        #expect(pruned == 1 + 3 + 1)
        #expect(try h.scalar("SELECT string_agg(transaction_id, ',' ORDER BY transaction_id) FROM receipt_unclaimed")
            == "claimed-100,waiting-300")
        #expect(try h.scalar("SELECT string_agg(user_id, ',' ORDER BY user_id) FROM receipt_events")
            == "old-undelivered,recent-delivered")
        #expect(try h.scalar("SELECT string_agg(signed_payload, ',' ORDER BY signed_payload) FROM receipt_notifications")
            == "payload-applied-100,payload-dead-200,payload-queued")
        // A period under Apple's 180 days of Notification History still keeps notifications that long.
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 86_400, deleteAfterSeconds: 86_400) == 1)
        #expect(try h.scalar("SELECT string_agg(signed_payload, ',' ORDER BY signed_payload) FROM receipt_notifications")
            == "payload-applied-100,payload-dead-200,payload-queued")
        #expect(try h.scalar("SELECT string_agg(user_id, ',' ORDER BY user_id) FROM receipt_events") == "old-undelivered")
    }

    @Test("a retry waits for its backoff: the sweep promotes it only when due")
    func backoffRespected() throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("bo-1")]), order: "backoff")
        let job = try #require(try h.store.claim(worker: "w", limit: 1, leaseSeconds: 30).first)
        // 5 s, so that the sweep just after is sure to come before it on a loaded machine (1 s was not).
        let outcome = JobOutcome(lease: job.lease, kind: .retry, error: "timeout", retryInSeconds: 5, maxAttempts: 10)
        #expect(try h.store.complete([outcome]).first?.state == .retry)
        #expect(try h.store.sweep(maxAttempts: 10).promoted == 0)
        #expect(try h.job(id)["state"] == "retry")
        #expect(try h.waitUntil(60) { try h.scalar("SELECT run_at <= now() FROM receipt_jobs WHERE id = $1", [String(id)]) == "t" })
        #expect(try h.store.sweep(maxAttempts: 10).promoted == 1)
        #expect(try h.job(id)["state"] == "queued")
    }

    @Test("dead notifications go back to the queue with fresh attempts, each recorded in the admin log")
    func requeueDeadNotifications() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, signed_payload, payload_hash, attempts, reason, last_error,
                                               finished_at)
            SELECT s.state, 'payload-' || s.n, encode(sha256(convert_to(s.n, 'UTF8')), 'hex'), 20,
                   CASE WHEN s.state = 'dead' THEN 'retries_exhausted' END, 'OCSP responder unreachable', now()
            FROM (VALUES ('dead', 'a'), ('dead', 'b'), ('applied', 'c')) AS s(state, n)
            """)
        #expect(try h.store.requeueDeadNotifications(note: "OCSP is back") == 2)
        #expect(try h.scalar("""
            SELECT string_agg(state || ':' || attempts || ':' || coalesce(reason, '-') || ':' || (finished_at IS NULL),
                              ',' ORDER BY signed_payload)
            FROM receipt_notifications
            """) == "queued:0:-:true,queued:0:-:true,applied:20:-:false")
        #expect(try h.scalar("""
            SELECT count(*) FROM receipt_admin_log WHERE action = 'requeue_notification'
              AND detail LIKE 'notification % was dead (20 attempts): OCSP responder unreachable; note: OCSP is back'
            """) == "2")
        #expect(try h.store.requeueDeadNotifications(note: nil) == 0)
    }

    /// The metric of written notifications takes the reason the database recorded, also when the function decided it.
    @Test("a verified notification for an app not ours is written back rejected, with the reason bundle_mismatch")
    func notificationReasonDecidedByTheDatabase() throws {
        let h = try Harness()
        _ = try h.scalar("SELECT receive_notification($1)", [NotificationReceiverTests.algNone(signature: "b3RoZXI")])
        let claimed = try #require(try h.store.claimNotifications(worker: "w", limit: 1, leaseSeconds: 30).first)
        let result = NotificationOutcome(
            kind: .verified,
            notification: NotificationOutcome.Facts(
                uuid: UUID().uuidString.lowercased(), type: "REFUND", environment: "Sandbox",
                bundleId: "com.example.not-ours", signedDateMs: Int64(Date().timeIntervalSince1970 * 1000)
            )
        )
        let written = try h.store.applyNotification(claimed, result: result)
        #expect(written.state == "rejected")
        #expect(written.reason == "bundle_mismatch")
    }

    /// Verifying a notification waits for Apple's OCSP responders (up to their timeout, for each certificate of the
    /// chain). That happens on a loop of its own: the leases of jobs in long Apple calls are renewed meanwhile.
    @Test("a notification whose certificate check hangs does not hold up lease renewals: no job is rescued")
    func hangingRevocationCheckLeavesLeasesRenewed() throws {
        // A 6 s lease (renewed every 2 s) and a call 20 s long: three leases, with 4 s of slack for a renewal
        // delayed on a loaded machine (a 2 s lease left 1.3 s).
        let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(latencyMilliseconds: 20_000), timeoutSeconds: 60)
        var options = SigningChain.Options()
        options.leafOCSPURL = "http://127.0.0.1:9/ocsp"
        options.intermediateOCSPURL = options.leafOCSPURL
        let chain = try SigningChain(options)
        let signedDate = Int64(Date().timeIntervalSince1970 * 1000)
        let notification = try JWSSigner(chain: chain).sign(Data("""
            {"notificationType":"REFUND","notificationUUID":"\(UUID().uuidString.lowercased())","signedDate":\(signedDate),
             "version":"2.0","data":{"bundleId":"com.example.app","environment":"Production"}}
            """.utf8))
        _ = try h.scalar("SELECT receive_notification($1)", [notification])
        // An OCSP request that hangs until the test lets it go (ignoring cancellation: swift-certificates gives up on
        // a check after 10 s, but waits for the request to return), so the hang outlasts the job's whole call
        // however slowly the machine runs, rather than racing it.
        let hang = OCSPHang()
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [chain.root], onlineChecks: true),
            ocsp: OCSPClient { _, _ in try await hang.request() }
        )
        let threads = try h.startWorkers(1, signedData: verifier) { $0.leaseSeconds = 6 }
        defer {
            hang.release()
            for thread in threads { _ = thread.stop(waitingUpTo: 30) }
        }
        // The job is enqueued once the worker is inside the check: its whole call, and every renewal of its lease,
        // fall within the hang.
        #expect(
            try h.waitUntil(120) { hang.counts.started >= 1 }, "the worker never started the notification's OCSP check"
        )
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("ocsp-1")]), order: "ocsp-hangs")
        var rescued = 0
        let verified = try h.waitUntil(120) {
            rescued += try h.store.sweep(maxAttempts: 10).rescued
            return try h.job(id)["state"] == "verified"
        }
        #expect(verified, "\((try? h.job(id)) ?? [:])")
        #expect(rescued == 0, "the job's lease ran out while a notification's OCSP check hung")
        #expect(hang.counts == (1, 0), "the check hung all along: \(hang.counts)")
        #expect(try h.scalar("SELECT state FROM receipt_notifications") == "running")
        // The responder fails (unreachable) and the worker is stopped.
        hang.release()
        for thread in threads { thread.worker.shutdown() }
        #expect(threads.allSatisfy { $0.wait(seconds: 90) })
        try Harness.rethrow(threads)
        #expect(try h.job(id)["attempts"] == "1")
    }

    /// OCSP requests that wait until `release()`, then fail as unreachable ones do; counted.
    final class OCSPHang: Sendable {
        private struct State {
            var released = false
            var started = 0
            var ended = 0
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())

        /// Requests started, and those that returned.
        var counts: (started: Int, ended: Int) { state.withLock { ($0.started, $0.ended) } }

        func request() async throws -> [UInt8] {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let released = state.withLock { state in
                    state.started += 1
                    if !state.released { state.waiting.append(continuation) }
                    return state.released
                }
                if released { continuation.resume() }
            }
            state.withLock { $0.ended += 1 }
            throw HostileSignedDataTests.Unreachable()
        }

        func release() {
            let waiting = state.withLock { state in
                state.released = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// Leases are renewed while a call is in flight (every third of the lease), so a slow Apple on a live worker
    /// costs nothing: only a worker that stopped renewing is rescued.
    @Test("a call that outlasts the lease of a live worker keeps its job: renewed, never rescued, one attempt")
    func renewedWhileInFlight() throws {
        // A 6 s lease (renewed every 2 s) and a call 20 s long: three leases, with 4 s of slack for a renewal
        // delayed on a loaded machine (a 2 s lease left 1.3 s).
        let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(latencyMilliseconds: 20_000), timeoutSeconds: 60)
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("long-1")]), order: "long-call")
        let threads = try h.startWorkers(1) { $0.leaseSeconds = 6 }
        var leases: Set<String> = []
        var rescued = 0
        // Sweeping all along from outside, as `receipt-worker sweep` or another worker would.
        let verified = try h.waitUntil(120) {
            rescued += try h.store.sweep(maxAttempts: 10).rescued
            if let lease = try h.scalar("SELECT lease_until::text FROM receipt_jobs WHERE id = $1 AND state = 'running'", [String(id)]) {
                leases.insert(lease)
            }
            return try h.job(id)["state"] == "verified"
        }
        #expect(threads.allSatisfy { $0.wait(seconds: 60) })
        try Harness.rethrow(threads)
        #expect(verified, "\((try? h.job(id)) ?? [:])")
        #expect(rescued == 0)
        #expect(leases.count >= 3, "the lease was not renewed during a call three leases long: \(leases)")
        #expect(try h.scalar("SELECT rescues FROM receipt_jobs WHERE id = $1", [String(id)]) == "0")
        #expect(try h.job(id)["attempts"] == "1")
        #expect(h.fake.stats().total == 1)
        #expect(try h.scalar("SELECT finished_at - created_at > interval '18 seconds' FROM receipt_jobs") == "t")
    }

    @Test("receipt_jobs_stuck names each problem: lease expired, queued too long, retrying many times, dead")
    func stuckCategories() throws {
        let h = try Harness()
        var ids: [String: Int64] = [:]
        for name in ["lease", "queued", "retrying", "dead", "fine-queued", "fine-retry"] {
            ids[name] = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("stuck-\(name)")]), order: "stuck-\(name)")
        }
        func set(_ name: String, _ assignments: String) throws {
            _ = try h.db.query("UPDATE receipt_jobs SET \(assignments) WHERE id = $1", [String(ids[name] ?? 0)])
        }
        try set("lease", "state = 'running', locked_by = 'gone', lease_token = gen_random_uuid(), lease_until = now() - interval '1 second', attempts = 1")
        try set("queued", "run_at = now() - interval '6 minutes'")
        try set("retrying", "state = 'retry', attempts = 5, run_at = now() + interval '1 minute'")
        try set("dead", "state = 'dead', reason = 'retries_exhausted', attempts = 80, finished_at = now()")
        try set("fine-queued", "run_at = now() - interval '4 minutes'")
        try set("fine-retry", "state = 'retry', attempts = 4, run_at = now() + interval '1 minute'")
        let stuck = try h.db.query("SELECT id, problem FROM receipt_jobs_stuck ORDER BY id").rows
        let problems = Dictionary(uniqueKeysWithValues: stuck.map { ($0[0] ?? "", $0[1] ?? "") })
        #expect(problems == [
            String(ids["lease"] ?? 0): "lease expired", String(ids["queued"] ?? 0): "queued too long",
            String(ids["retrying"] ?? 0): "retrying many times", String(ids["dead"] ?? 0): "dead",
        ])
    }

    @Test("the views answer an operator's first questions")
    func views() throws {
        let h = try Harness()
        let dead = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("vw-1")], status: 21009), order: "view-dead")
        let good = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("vw-2")]), order: "view-good")
        try h.drain { $0.retry.maxAttempts = 2 }
        #expect(try h.job(good)["state"] == "verified")
        let stuck = try h.db.query("SELECT id, problem, order_id, attempts, apple_status, last_error FROM receipt_jobs_stuck")
        #expect(stuck.rows.count == 1)
        #expect(stuck[0, "id"] == String(dead))
        #expect(stuck[0, "order_id"] == "view-dead")
        #expect(stuck[0, "apple_status"] == "21009")
        #expect(stuck[0, "last_error"]?.contains("21009") == true)
        let summary = try h.db.query("SELECT state, jobs FROM receipt_queue_summary")
        // Every state, and expected orders (expect_purchase()) apart from the queued work.
        #expect(summary.rows.map { $0[0] ?? "" } == ["queued", "running", "retry", "verified", "rejected", "dead", "expected"])
        #expect(summary.rows.contains { $0 == ["verified", "1"] })
        #expect(summary.rows.contains { $0 == ["dead", "1"] })
        let failures = try h.db.query("SELECT state, reason, apple_status, jobs FROM receipt_failures")
        #expect(failures.rows.contains { $0 == ["dead", "retries_exhausted", "21009", "1"] })
    }
}
