#if os(Linux)
import Foundation
import LoopbackHTTP
import Logging
import PostgresClient
import ReceiptQueue
import Synchronization
import Testing
import Workers

/// What `work`'s maintenance loop reports after each retention pass (`WorkerEvents.retentionSampled`, exported as
/// receipt_worker_retention_oldest_deletable_age_seconds{kind}): per kind whose retention is set, the age of the oldest
/// row retention may delete but has not. Rows it must keep never show; rows it could not delete (locked by another
/// transaction, or receipt_prune failing every pass) show with their kind and age until a pass deletes them.
@Suite("Retention backlog: what a pass left that it may delete, per kind", .ownThread)
struct RetentionBacklogTests {
    static let day = 86_400.0

    /// A worker running its maintenance loop (no drain) with `retention`, a pass every 0.2 s, and the samples it
    /// reports.
    /// The samples a worker reported, in order.
    final class Samples: Sendable {
        private let list = Mutex<[[RetentionBacklog]]>([])
        func withLock<T>(_ body: (inout [[RetentionBacklog]]) -> T) -> T { list.withLock { body(&$0) } }
    }

    final class Run {
        let thread: WorkerThread
        private let samples = Samples()

        init(_ h: Harness, _ retention: Retention) throws {
            var logger = Logger(label: "test-retention")
            logger.logLevel = .critical
            let configuration = Harness.configuration {
                $0.drain = false
                $0.retention = retention
                $0.retentionIntervalSeconds = 0.2
            }
            let samples = self.samples
            thread = try WorkerThread(
                Worker(
                    configuration: configuration, databaseURL: h.databaseURL, client: h.client,
                    signedData: h.signedData, logger: logger,
                    events: WorkerEvents(retentionSampled: { sample in samples.withLock { $0.append(sample) } })
                )
            )
        }

        deinit { _ = thread.stop(waitingUpTo: 10) }

        /// The first sample of a pass started after this call that satisfies `condition`, within `timeout` seconds.
        func next(
            timeout: Double = 30, where condition: ([String: RetentionBacklog]) -> Bool = { _ in true }
        ) throws -> [String: RetentionBacklog] {
            // A pass under way may have read the table before the caller's change: skip it.
            let skip = samples.withLock { $0.count } + 1
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline {
                let all = samples.withLock { $0 }
                if all.count > skip {
                    for sample in all[skip...] {
                        let byKind = Dictionary(sample.map { ($0.kind, $0) }, uniquingKeysWith: { $1 })
                        if condition(byKind) { return byKind }
                    }
                }
                if let error = thread.error { throw error }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw TestSetupError("no retention sample within \(timeout) s that met the condition; last: "
                                 + "\(samples.withLock { $0.last ?? [] })")
        }
    }

    /// Whether `age` is `days` days, give or take a few minutes (the rows' ages were set with now() at insert).
    static func isAbout(_ age: Double?, days: Double) -> Bool {
        guard let age else { return false }
        return abs(age - days * day) < 600
    }

    @Test("a delivered event locked by another transaction shows under events with its age; after a pass deletes it, 0; kinds whose retention is off have no sample")
    func lockedRows() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'locked-40', now() - interval '40 days', now() - interval '39 days'),
                ('renewed', 'young-20', now() - interval '20 days', now() - interval '19 days'),
                ('revoked', 'undelivered-400', now() - interval '400 days', NULL)
            """)
        // Old enough for jobs' and notifications' retention, which is off here: no sample may name them.
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, signed_payload, payload_hash, finished_at)
            VALUES ('applied', 'applied-400', encode(sha256('applied-400'::bytea), 'hex'), now() - interval '400 days')
            """)
        let locker = try PostgresConnection(h.databaseURL)
        defer { locker.close() }
        _ = try locker.query("BEGIN")
        _ = try locker.query("SELECT 1 FROM receipt_events WHERE user_id = 'locked-40' FOR UPDATE")

        let run = try Run(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil, deleteEventsAfterDays: 30))
        let behind = try run.next()
        // Only the kinds whose retention is set: events, and forgeries (7 days unless turned off).
        #expect(behind.keys.sorted() == ["events", "forgeries"])
        #expect(behind["events"]?.periodSeconds == 30 * Self.day)
        // The locked 40-day-old event; not the undelivered one (never deleted), not the 20-day-old one (not due).
        #expect(Self.isAbout(behind["events"]?.oldestDeletableAgeSeconds, days: 40), "\(behind)")
        #expect(behind["forgeries"]?.oldestDeletableAgeSeconds == 0)
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "3")

        _ = try locker.query("COMMIT")
        let caughtUp = try run.next { $0["events"]?.oldestDeletableAgeSeconds == 0 }
        #expect(caughtUp["events"]?.oldestDeletableAgeSeconds == 0)
        #expect(try h.scalar("SELECT string_agg(user_id, ',' ORDER BY user_id) FROM receipt_events")
                == "undelivered-400,young-20")
    }

    @Test("while receipt_prune fails every pass, deletable notifications, refund requests and consumption show with their ages; what must be kept never does; once it works again, 0")
    func pruneFailing() throws {
        let h = try Harness()
        // Kept whatever their age: a dead notification, a pending refund request, the consumption record
        // that request needs; not due yet: a notification finished 185 days ago (period 190).
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, reason, signed_payload, payload_hash, finished_at)
            SELECT s.state, s.reason, s.label, encode(sha256(convert_to(s.label, 'UTF8')), 'hex'),
                   now() - s.age * interval '1 day'
            FROM (VALUES ('dead', 'retries_exhausted', 'dead-400', 400), ('applied', NULL, 'applied-300', 300), ('applied', NULL, 'applied-185', 185),
                         ('rejected', 'invalid_signature', 'forgery-9', 9))
                 AS s(state, reason, label, age)
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_refund_requests (environment, transaction_id, state, respond_by, notification_uuid)
            SELECT 'Production', s.tx, s.state, now() - s.age * interval '1 day', gen_random_uuid()
            FROM (VALUES ('t-pending', 'pending', 400), ('t-answered', 'answered', 250)) AS s(tx, state, age)
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_consumption (transaction_id, consumption_percentage, updated_at)
            SELECT s.tx, 50000, now() - s.age * interval '1 day'
            FROM (VALUES ('t-pending', 500), ('t-orphan', 220)) AS s(tx, age)
            """)
        // receipt_prune gone, as when the worker's role may not run it: every pass fails.
        let prune = "receipt_prune(interval, interval, integer, interval, interval, interval, interval)"
        _ = try h.db.query("ALTER FUNCTION \(prune) RENAME TO receipt_prune_off")

        let run = try Run(h, Retention(
            clearReceiptsAfterDays: nil, deleteAfterDays: nil, deleteNotificationsAfterDays: 190,
            deleteRefundRequestsAfterDays: 200
        ))
        let behind = try run.next()
        #expect(behind.keys.sorted() == ["consumption", "forgeries", "notifications", "refund_requests"])
        #expect(behind["notifications"]?.periodSeconds == 190 * Self.day)
        #expect(behind["refund_requests"]?.periodSeconds == 200 * Self.day)
        // The applied one, not the dead one (never deleted).
        #expect(Self.isAbout(behind["notifications"]?.oldestDeletableAgeSeconds, days: 300), "\(behind)")
        #expect(Self.isAbout(behind["forgeries"]?.oldestDeletableAgeSeconds, days: 9), "\(behind)")
        // The answered one by its deadline, not the pending one.
        #expect(Self.isAbout(behind["refund_requests"]?.oldestDeletableAgeSeconds, days: 250), "\(behind)")
        // The orphan, not the record the pending request still needs.
        #expect(Self.isAbout(behind["consumption"]?.oldestDeletableAgeSeconds, days: 220), "\(behind)")

        _ = try h.db.query("ALTER FUNCTION receipt_prune_off(interval, interval, integer, interval, interval, "
                           + "interval, interval) RENAME TO receipt_prune")
        let caughtUp = try run.next { samples in samples.values.allSatisfy { $0.oldestDeletableAgeSeconds == 0 } }
        #expect(caughtUp.values.allSatisfy { $0.oldestDeletableAgeSeconds == 0 }, "\(caughtUp)")
        #expect(try h.scalar("SELECT string_agg(signed_payload, ',' ORDER BY signed_payload) FROM receipt_notifications")
                == "applied-185,dead-400")
        #expect(try h.scalar("SELECT string_agg(transaction_id, ',' ORDER BY transaction_id) FROM receipt_refund_requests")
                == "t-pending")
        #expect(try h.scalar("SELECT string_agg(transaction_id, ',' ORDER BY transaction_id) FROM receipt_consumption")
                == "t-pending")
    }

    @Test("on 200,000 rows of each kind that retention must keep or that are not due, the backlog is a few index reads: no sequential scan")
    func cheapOnBigTables() throws {
        let h = try Harness()
        let rows = 200_000
        _ = try h.db.query("""
            INSERT INTO receipt_jobs (state, bundle_id, order_id, user_id, product_id, receipt_data, finished_at,
                                      delivered_at)
            SELECT CASE WHEN n % 2 = 0 THEN 'verified' ELSE 'dead' END, 'com.example.app', 'kept-' || n, 'u', 'p',
                   CASE WHEN n % 3 = 0 THEN 'cmVjZWlwdA==' END,
                   now() - CASE WHEN n % 3 = 0 THEN interval '1 day' ELSE interval '400 days' END,
                   CASE WHEN n % 3 = 0 THEN now() - interval '1 day' END
            FROM generate_series(1, \(rows)) AS n
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at)
            SELECT 'renewed', 'u-' || n, now() - CASE WHEN n % 2 = 0 THEN interval '400 days' ELSE interval '1 day' END,
                   CASE WHEN n % 2 = 1 THEN now() END
            FROM generate_series(1, \(rows)) AS n
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, reason, signed_payload, payload_hash, finished_at)
            SELECT s.state, s.reason, 'n-' || n, encode(sha256(convert_to('n-' || n, 'UTF8')), 'hex'),
                   now() - s.age * interval '1 day'
            FROM generate_series(1, \(rows)) AS n,
                 LATERAL (SELECT CASE WHEN n % 3 = 0 THEN 'dead' WHEN n % 3 = 1 THEN 'applied' ELSE 'rejected' END,
                                 CASE WHEN n % 3 = 0 THEN 'retries_exhausted' WHEN n % 3 = 2 THEN 'invalid_signature' END,
                                 CASE WHEN n % 3 = 0 THEN 400 ELSE 1 END) AS s(state, reason, age)
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_refund_requests (environment, transaction_id, state, respond_by, notification_uuid)
            SELECT 'Production', 't-' || n, CASE WHEN n % 2 = 0 THEN 'pending' ELSE 'answered' END,
                   now() - CASE WHEN n % 2 = 0 THEN interval '400 days' ELSE interval '1 day' END, gen_random_uuid()
            FROM generate_series(1, \(rows)) AS n
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_consumption (transaction_id, consumption_percentage, updated_at)
            SELECT 't-' || n, 50000, now() - interval '1 day' FROM generate_series(1, \(rows)) AS n
            """)
        _ = try h.db.query("ANALYZE receipt_jobs, receipt_events, receipt_notifications, receipt_refund_requests, "
                           + "receipt_consumption")
        let retention = Retention(clearReceiptsAfterDays: 30, deleteAfterDays: 90, deleteRefundRequestsAfterDays: 200)
        let periods = Retention.kinds.map { String(retention.periodSeconds($0) ?? Retention.neverDays * 86_400) }
        let plan = try h.db.query("EXPLAIN " + JobStore.retentionBacklogQuery, periods).rows
            .compactMap { $0.first ?? nil }.joined(separator: "\n")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
        for index in ["receipt_jobs_retained", "receipt_jobs_deletable", "receipt_events_delivered",
                      "receipt_notifications_finished", "receipt_notifications_forgeries",
                      "receipt_refund_requests_settled", "receipt_consumption_updated"] {
            #expect(plan.contains(index), "\(index) not used: \(plan)")
        }

        _ = try h.db.query("BEGIN")
        let behind = try h.store.retentionBacklog(retention)
        // This transaction's own reads of the five tables: sequential scans, and rows read by them and by index
        // scans (one or two per kind: the first entry of each index, checked in the table while it is not vacuumed).
        let read = try h.db.query("""
            SELECT sum(seq_scan) AS scans, sum(seq_tup_read + coalesce(idx_tup_fetch, 0)) AS read
            FROM pg_stat_xact_user_tables
            WHERE relname IN ('receipt_jobs', 'receipt_events', 'receipt_notifications', 'receipt_refund_requests',
                              'receipt_consumption')
            """)
        _ = try h.db.query("COMMIT")
        #expect(read[0, "scans"] == "0")
        #expect(Int(read[0, "read"] ?? "") ?? .max <= 2 * Retention.kinds.count, "rows read: \(read[0, "read"] ?? "?")")
        #expect(behind.allSatisfy { $0.oldestDeletableAgeSeconds == 0 }, "\(behind)")
        #expect(behind.map(\.kind) == Retention.kinds)
    }
}

/// The gauge as the real `receipt-worker work` exports it on METRICS_PORT, run as the receipt_worker role of
/// deploy/sql/roles.sql. Slow: `work`'s first retention pass comes a minute after it starts.
@Suite("Retention backlog on /metrics of a running worker", .ownThread)
struct RetentionBacklogMetricsTests {
    @Test("a locked 40-day-old delivered event shows as receipt_worker_retention_oldest_deletable_age_seconds{kind=\"events\"} after the first pass, with the period; kinds whose retention is off have no series")
    func exported() throws {
        let world = try RolesTests.worldWithRoles()
        try world.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'locked-40', now() - interval '40 days', now() - interval '39 days')
            """)
        try world.query("""
            INSERT INTO receipt_jobs (state, bundle_id, order_id, user_id, product_id, finished_at, delivered_at)
            VALUES ('verified', 'com.example.app', 'old', 'u', 'p', now() - interval '400 days', now())
            """)
        let locker = try PostgresConnection(world.databaseURL)
        defer { locker.close() }
        _ = try locker.query("BEGIN")
        _ = try locker.query("SELECT 1 FROM receipt_events WHERE user_id = 'locked-40' FOR UPDATE")
        let port = try freePort()
        let worker = try world.startWorker([
            "DATABASE_URL": RolesTests.url(world, as: "worker_login"), "RETENTION_EVENTS_DAYS": "30",
            "METRICS_PORT": String(port), "METRICS_HOST": "127.0.0.1",
        ])
        let age = #"receipt_worker_retention_oldest_deletable_age_seconds{kind="events"}"#
        var text = ""
        let deadline = Date(timeIntervalSinceNow: 120)
        while Date() < deadline {
            text = (try? LoopbackHTTPClient.get("/metrics", port: port).text) ?? ""
            if Self.value(age, in: text) != nil { break }
            Thread.sleep(forTimeInterval: 1)
        }
        try #require(Self.value(age, in: text) != nil, "no retention sample in 120 s:\n\(text)\n\(worker.output)")
        #expect(abs((Self.value(age, in: text) ?? 0) - 40 * 86_400) < 600, "\(text)")
        let period = Self.value(#"receipt_worker_retention_period_seconds{kind="events"}"#, in: text)
        #expect(period.map { abs($0 - 30 * 86_400) < 1 } == true, "\(text)")
        #expect(Self.value(#"receipt_worker_retention_oldest_deletable_age_seconds{kind="forgeries"}"#, in: text) == 0)
        // RETENTION_DELETE_DAYS is not set: the 400-day-old delivered job is not behind, it is kept for good.
        #expect(!text.contains(#"kind="jobs""#), "\(text)")
        #expect(!text.contains(#"kind="receipts""#), "\(text)")
        #expect(!worker.output.contains("retention backlog not read"), "\(worker.output)")
        _ = try locker.query("ROLLBACK")
    }

    /// The value of a series written as it appears in the exposition.
    static func value(_ series: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}
#endif
