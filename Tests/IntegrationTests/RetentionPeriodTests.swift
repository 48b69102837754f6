#if os(Linux)
import Foundation
import ReceiptQueue
import Testing
import Workers

/// Retention (receipt_prune) of events, notifications, refund requests and consumption records, each after a period of
/// its own, and what it never deletes: undelivered events, unfinished and dead notifications, pending refund requests,
/// the consumption records a kept request needs, consents; notifications and refund requests 180 days at least.
@Suite("Retention: each kind after its own period; what is still needed stays", .ownThread)
struct RetentionPeriodTests {
    static let never = Retention.neverDays

    /// Prunes in batches of `batch` until a call deletes nothing; the rows cleared and deleted.
    static func prune(_ h: Harness, _ retention: Retention, batch: Int = 1) throws -> Int {
        var total = 0
        while true {
            let count = try h.store.prune(retention, batch: batch)
            if count == 0 { return total }
            total += count
        }
    }

    static func list(_ h: Harness, _ sql: String) throws -> String {
        try h.scalar(sql) ?? ""
    }

    @Test("delivered events go after RETENTION_EVENTS_DAYS (else RETENTION_DELETE_DAYS); undelivered ones never")
    func events() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'delivered-40', now() - interval '40 days', now() - interval '39 days'),
                ('renewed', 'delivered-20', now() - interval '20 days', now() - interval '19 days'),
                ('revoked', 'undelivered-400', now() - interval '400 days', NULL)
            """)
        let events = "SELECT string_agg(user_id, ',' ORDER BY user_id) FROM receipt_events"
        // Their own period of "never" wins over the jobs' 10 days.
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 10,
                                            deleteEventsAfterDays: Self.never)) == 0)
        #expect(try Self.list(h, events) == "delivered-20,delivered-40,undelivered-400")
        // Their own 30 days, with no other retention.
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil,
                                            deleteEventsAfterDays: 30)) == 1)
        #expect(try Self.list(h, events) == "delivered-20,undelivered-400")
        // Not set: the jobs' period. The undelivered event stays, however old: the API layer has not acted on it.
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 10)) == 1)
        #expect(try Self.list(h, events) == "undelivered-400")
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 0, deleteAfterSeconds: 0, deleteEventsAfterSeconds: 0) == 0)
        #expect(try Self.list(h, events) == "undelivered-400")
    }

    @Test("finished notifications go after RETENTION_NOTIFICATIONS_DAYS, never within 180 days; unfinished and dead ones stay")
    func notifications() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_notifications (state, reason, signed_payload, payload_hash, finished_at)
            SELECT s.state, s.reason, s.label, encode(sha256(convert_to(s.label, 'UTF8')), 'hex'),
                   now() - s.age * interval '1 day'
            FROM (VALUES ('applied', NULL, 'applied-200', 200), ('duplicate', NULL, 'duplicate-200', 200),
                         ('rejected', 'bundle_mismatch', 'rejected-200', 200), ('applied', NULL, 'applied-170', 170),
                         ('dead', 'retries_exhausted', 'dead-400', 400), ('retry', NULL, 'retry-400', 400),
                         ('queued', NULL, 'queued-400', 400), ('running', NULL, 'running-400', 400))
                 AS s(state, reason, label, age)
            """)
        let notifications = "SELECT string_agg(signed_payload, ',' ORDER BY signed_payload) FROM receipt_notifications"
        let kept = "dead-400,queued-400,retry-400,running-400"
        // Their own "never" wins over the jobs' 10 days.
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 10,
                                            deleteNotificationsAfterDays: Self.never)) == 0)
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil,
                                            deleteNotificationsAfterDays: 190)) == 3)
        #expect(try Self.list(h, notifications) == "applied-170," + kept)
        // A shorter period, given to the database directly, still keeps them 180 days.
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 0, deleteAfterSeconds: 0,
                                  deleteNotificationsAfterSeconds: 86_400) == 0)
        #expect(try Self.list(h, notifications) == "applied-170," + kept)
        // Not set: the jobs' period (here 1 day, so the 180 days).
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 1)) == 0)
        _ = try h.db.query("UPDATE receipt_notifications SET finished_at = now() - interval '181 days' "
                           + "WHERE signed_payload = 'applied-170'")
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 1)) == 1)
        #expect(try Self.list(h, notifications) == kept)
    }

    @Test("settled refund requests go after RETENTION_REFUND_REQUESTS_DAYS past their deadline, 180 days at least; pending ones, the consumption they need and consents stay")
    func refundRequests() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_refund_requests (environment, transaction_id, state, respond_by, notification_uuid)
            SELECT 'Production', s.tx, s.state, now() - s.age * interval '1 day', gen_random_uuid()
            FROM (VALUES ('t-answered', 'answered', 200), ('t-skipped', 'skipped', 200), ('t-failed', 'failed', 200),
                         ('t-pending', 'pending', 400), ('t-recent', 'answered', 100)) AS s(tx, state, age)
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_consumption (transaction_id, consumption_percentage, updated_at)
            SELECT s.tx, 50000, now() - s.age * interval '1 day'
            FROM (VALUES ('t-pending', 400), ('t-recent', 400), ('t-answered', 400), ('t-orphan', 400), ('t-fresh', 10))
                 AS s(tx, age)
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_customer_consents (user_id, consented, updated_at)
            VALUES ('u-old', true, now() - interval '900 days')
            """)
        let requests = "SELECT string_agg(transaction_id, ',' ORDER BY transaction_id) FROM receipt_refund_requests"
        let consumption = "SELECT string_agg(transaction_id, ',' ORDER BY transaction_id) FROM receipt_consumption"
        // Their own "never" wins over the jobs' 10 days.
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 10,
                                            deleteRefundRequestsAfterDays: Self.never)) == 0)
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil,
                                            deleteRefundRequestsAfterDays: 190)) == 3 + 2)
        #expect(try Self.list(h, requests) == "t-pending,t-recent")
        // t-answered's record went with its request; t-pending's and t-recent's stay for their kept requests.
        #expect(try Self.list(h, consumption) == "t-fresh,t-pending,t-recent")
        // A shorter period, given to the database directly, still keeps them 180 days past the deadline.
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 0, deleteAfterSeconds: 0,
                                  deleteRefundRequestsAfterSeconds: 86_400) == 0)
        #expect(try Self.list(h, requests) == "t-pending,t-recent")
        // Past 180 days, with the jobs' period: the request goes, then its consumption record.
        _ = try h.db.query("UPDATE receipt_refund_requests SET respond_by = now() - interval '181 days' "
                           + "WHERE transaction_id = 't-recent'")
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 1)) == 2)
        #expect(try Self.list(h, requests) == "t-pending")
        #expect(try Self.list(h, consumption) == "t-fresh,t-pending")
        #expect(try h.scalar("SELECT count(*) FROM receipt_customer_consents") == "1")
    }

    @Test("each call deletes at most a batch of each kind")
    func batches() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, created_at, delivered_at)
            SELECT 'renewed', now() - interval '40 days', now() - interval '40 days' FROM generate_series(1, 10)
            """)
        let events = "SELECT count(*) FROM receipt_events"
        #expect(try h.store.prune(clearReceiptsAfterSeconds: 0, deleteAfterSeconds: 86_400, batch: 4) == 4)
        #expect(try h.scalar(events) == "6")
        #expect(try Self.prune(h, Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 1), batch: 4) == 6)
        #expect(try h.scalar(events) == "0")
    }

    @Test("receipt_retention: the oldest row each kind may delete, never one it keeps")
    func view() throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'undelivered', '2020-01-01', NULL),
                ('revoked', 'delivered', '2021-01-01', '2021-01-02')
            """)
        _ = try h.db.query("""
            INSERT INTO receipt_refund_requests (environment, transaction_id, state, respond_by) VALUES
                ('Production', 't-1', 'pending', '2020-01-01'), ('Production', 't-2', 'skipped', '2022-01-01')
            """)
        // The older consumption records belong to t-1 and t-2, whose refund requests (pending, skipped: any state)
        // still need them: retention keeps them.
        _ = try h.db.query("""
            INSERT INTO receipt_consumption (transaction_id, consumption_percentage, updated_at) VALUES
                ('t-1', 50000, '2019-01-01'), ('t-2', 50000, '2020-01-01'), ('t-9', 50000, '2023-01-01')
            """)
        func oldest(_ kind: String) throws -> String? {
            try h.scalar("SELECT to_char(oldest AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM receipt_retention WHERE kind = $1",
                         [kind])
        }
        #expect(try oldest("events") == "2021-01-01")
        #expect(try oldest("refund requests") == "2022-01-01")
        #expect(try oldest("consumption") == "2023-01-01")
        #expect(try oldest("notifications") == nil)
        #expect(try h.scalar("SELECT minimum_kept::text FROM receipt_retention WHERE kind = 'notifications'")
            == "180 days")
        #expect(try h.scalar("SELECT string_agg(kind, ',') FROM receipt_retention")
            == "receipts,jobs,events,notifications,forgeries,refund requests,consumption,unclaimed purchases,consents,"
               + "account tokens")
    }

    @Test("sweep and status read the periods: a flag over its variable, 0 is never, under 180 days refused")
    func commands() async throws {
        let h = try Harness()
        _ = try h.db.query("""
            INSERT INTO receipt_events (kind, user_id, created_at, delivered_at) VALUES
                ('revoked', 'delivered-40', now() - interval '40 days', now() - interval '39 days')
            """)
        let environment = ChildProcess.environment(setting: [
            "DATABASE_URL": h.databaseURL, "RETENTION_EVENTS_DAYS": "0", "RETENTION_REFUND_REQUESTS_DAYS": "365",
        ])
        let refused = try await CommandsTests.run(["sweep", "--delete-notifications-after-days", "30"], environment)
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.output.contains("--delete-notifications-after-days must be at least 180 days, got 30:"),
                "\(refused.output)")
        let variable = try await CommandsTests.run(
            ["sweep", "--delete-after-days", "1"],
            environment.merging(["RETENTION_REFUND_REQUESTS_DAYS": "36501"]) { $1 }
        )
        #expect(variable.status == 2, "\(variable.output)")
        #expect(variable.output.contains("RETENTION_REFUND_REQUESTS_DAYS must be at most 36500 days"), "\(variable.output)")
        // RETENTION_EVENTS_DAYS=0 keeps the event although the jobs' period is a day.
        let kept = try await CommandsTests.run(["sweep", "--delete-after-days", "1"], environment)
        #expect(kept.status == 0 && kept.output.contains("pruned 0"), "\(kept.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "1")
        let status = try await CommandsTests.run(["status"], environment.merging(["RETENTION_DELETE_DAYS": "90"]) { $1 })
        #expect(status.status == 0, "\(status.output)")
        let table = status.output.split(separator: "What is kept how long").last ?? ""
        let lines = table.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        func line(_ kind: String) -> String { lines.first { $0.hasPrefix(kind + " ") } ?? "" }
        #expect(line("jobs").contains("90 days"), "\(status.output)")
        #expect(line("events").contains("never") && line("events").contains("undelivered events"), "\(status.output)")
        #expect(line("notifications").contains("180 days"), "\(status.output)")
        #expect(line("refund requests").contains("365 days"), "\(status.output)")
        #expect(line("forgeries").contains("7 days"), "\(status.output)")
        let deleted = try await CommandsTests.run(["sweep", "--delete-events-after-days", "30"], environment)
        #expect(deleted.status == 0 && deleted.output.contains("pruned 1"), "\(deleted.output)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "0")
    }
}
#endif
