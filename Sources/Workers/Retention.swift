import PostgresClient
import ReceiptQueue

/// How long each kind of row is kept (`receipt_prune`): finished jobs' receipts and rows, delivered events, finished
/// notifications, rejected forgeries, settled refund requests (with the consumption records nothing needs any more).
/// What is still needed is never deleted: unfinished, dead or undelivered jobs, undelivered events, unfinished or dead
/// notifications, pending refund requests, customers' consents, and the ledger.
public struct Retention: Sendable, Hashable {
    /// The period that stands for "never": 100 years, for a kind whose retention is not set.
    public static let neverDays: Double = 36_500
    /// How long a rejected forgery (a notification whose signature did not hold) is kept by default.
    public static let forgeryDays: Double = 7
    /// The shortest period finished notifications and settled refund requests are kept, whatever is set: Apple's
    /// Notification History reaches 180 days back, and a replayed notification must find its row.
    public static let minimumHistoryDays: Double = 180

    /// Seconds after a job finished before its `receipt_data` is cleared (its hash stays).
    public var clearReceiptsAfterSeconds: Double
    /// Seconds after a delivered verdict finished before its job is deleted.
    public var deleteAfterSeconds: Double
    /// Seconds after a delivered event was made before it is deleted.
    public var deleteEventsAfterSeconds: Double
    /// Seconds after a notification finished (applied, duplicate, rejected) before it is deleted; the database keeps
    /// it `minimumHistoryDays` at least.
    public var deleteNotificationsAfterSeconds: Double
    /// Seconds after a forgery was rejected (a notification rejected `invalid_signature`) before its row is deleted;
    /// nil keeps forgeries as long as other rejected notifications.
    public var deleteForgeriesAfterSeconds: Double?
    /// Seconds after a settled refund request's deadline (`respond_by`) before it is deleted, and after a consumption
    /// record's last change before it is (once no refund request of its transaction is kept); the database keeps
    /// them `minimumHistoryDays` at least.
    public var deleteRefundRequestsAfterSeconds: Double

    /// Periods in days. nil for the first two: never (`neverDays`); nil for forgeries: as other rejected
    /// notifications; nil for events, notifications and refund requests: `deleteAfterDays`'s period.
    public init(
        clearReceiptsAfterDays: Double?, deleteAfterDays: Double?, deleteForgeriesAfterDays: Double? = forgeryDays,
        deleteEventsAfterDays: Double? = nil, deleteNotificationsAfterDays: Double? = nil,
        deleteRefundRequestsAfterDays: Double? = nil
    ) {
        let deleteDays = deleteAfterDays ?? Self.neverDays
        clearReceiptsAfterSeconds = (clearReceiptsAfterDays ?? Self.neverDays) * 86_400
        deleteAfterSeconds = deleteDays * 86_400
        deleteForgeriesAfterSeconds = deleteForgeriesAfterDays.map { $0 * 86_400 }
        deleteEventsAfterSeconds = (deleteEventsAfterDays ?? deleteDays) * 86_400
        deleteNotificationsAfterSeconds = (deleteNotificationsAfterDays ?? deleteDays) * 86_400
        deleteRefundRequestsAfterSeconds = (deleteRefundRequestsAfterDays ?? deleteDays) * 86_400
    }

    /// Only forgeries are pruned (after `forgeryDays`): what a worker does when no other retention is set.
    public static let forgeriesOnly = Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil)

    /// Whether anything besides forgeries is ever deleted.
    public var deletesMoreThanForgeries: Bool {
        let never = Self.neverDays * 86_400
        return [clearReceiptsAfterSeconds, deleteAfterSeconds, deleteEventsAfterSeconds,
                deleteNotificationsAfterSeconds, deleteRefundRequestsAfterSeconds].contains { $0 < never }
    }
}

extension Retention {
    /// The kinds of row retention deletes, as `receipt_metrics`' `kind` label names them (receipt_retention's kinds,
    /// "refund requests" written `refund_requests`; consents are never deleted, so they have none).
    public static let kinds = ["receipts", "jobs", "events", "notifications", "forgeries", "refund_requests",
                               "consumption"]

    /// The period in effect for `kind`, in seconds, as receipt_prune applies it (`minimumHistoryDays` at least for
    /// notifications, refund requests and consumption records); nil when that kind is never deleted.
    public func periodSeconds(_ kind: String) -> Double? {
        let floor = Self.minimumHistoryDays * 86_400
        let seconds: Double? = switch kind {
        case "receipts": clearReceiptsAfterSeconds
        case "jobs": deleteAfterSeconds
        case "events": deleteEventsAfterSeconds
        case "notifications", "unclaimed purchases": max(deleteNotificationsAfterSeconds, floor)
        case "forgeries": deleteForgeriesAfterSeconds ?? periodSeconds("notifications")
        case "refund_requests", "consumption": max(deleteRefundRequestsAfterSeconds, floor)
        default: nil
        }
        // `neverDays` (retention not set) stays never: the floor is far below it.
        guard let seconds, seconds < Self.neverDays * 86_400 else { return nil }
        return seconds
    }
}

/// Retention falling behind, for one kind whose retention is set: the oldest row it may delete (older than the
/// period) but has not, read after a retention pass (`receipt_worker_retention_oldest_deletable_age_seconds`).
public struct RetentionBacklog: Sendable, Hashable {
    /// One of ``Retention/kinds``.
    public var kind: String
    /// The period in effect, in seconds.
    public var periodSeconds: Double
    /// Seconds since the oldest row retention may delete was finished (made, for events; its deadline, for refund
    /// requests; last changed, for consumption records), by the column that ages it; 0 when there is none.
    public var oldestDeletableAgeSeconds: Double

    public init(kind: String, periodSeconds: Double, oldestDeletableAgeSeconds: Double) {
        self.kind = kind
        self.periodSeconds = periodSeconds
        self.oldestDeletableAgeSeconds = oldestDeletableAgeSeconds
    }
}

extension JobStore {
    /// Per kind whose retention is set, the oldest row `prune(retention)` would delete now, with the conditions
    /// receipt_prune uses, each read as the first entry of the partial index that prune reads (011 and 021): a few
    /// index reads, not a count. Consumption records still needed by a refund request are skipped, as prune does
    /// (written as ORDER BY … LIMIT 1: PostgreSQL reads `min()` over an anti-join as an aggregate of every row).
    public func retentionBacklog(_ retention: Retention) throws -> [RetentionBacklog] {
        let periods = Retention.kinds.map { retention.periodSeconds($0) }
        guard periods.contains(where: { $0 != nil }) else { return [] }
        // A kind never deleted gets a cutoff 100 years ago: its index read finds nothing at once.
        let never = Retention.neverDays * 86_400
        let rows = try connection.query(Self.retentionBacklogQuery, periods.map { String($0 ?? never) })
        var ages: [String: Double] = [:]
        for index in rows.rows.indices {
            guard let kind = rows[index, "kind"] else { continue }
            ages[kind] = Double(rows[index, "age"] ?? "") ?? 0
        }
        return zip(Retention.kinds, periods).compactMap { kind, period in
            period.map { RetentionBacklog(kind: kind, periodSeconds: $0, oldestDeletableAgeSeconds: ages[kind] ?? 0) }
        }
    }

    /// $1…$7: the periods in seconds, in the order of ``Retention/kinds``.
    public static let retentionBacklogQuery = """
        SELECT k.kind, coalesce(extract(epoch FROM pg_catalog.now() - k.oldest), 0)::float8 AS age
        FROM (VALUES
            ('receipts', (SELECT min(j.finished_at) FROM receipt_jobs j
                          WHERE j.finished_at < pg_catalog.now() - $1::float8 * interval '1 second'
                            AND j.finished_at IS NOT NULL
                            AND (j.receipt_data IS NOT NULL OR j.signed_transaction IS NOT NULL))),
            ('jobs', (SELECT min(j.finished_at) FROM receipt_jobs j
                      WHERE j.finished_at < pg_catalog.now() - $2::float8 * interval '1 second'
                        AND j.delivered_at IS NOT NULL AND j.state IN ('verified', 'rejected'))),
            ('events', (SELECT min(e.created_at) FROM receipt_events e
                        WHERE e.created_at < pg_catalog.now() - $3::float8 * interval '1 second'
                          AND e.delivered_at IS NOT NULL)),
            ('notifications', (SELECT min(n.finished_at) FROM receipt_notifications n
                               WHERE n.finished_at < pg_catalog.now() - $4::float8 * interval '1 second'
                                 AND n.state IN ('applied', 'duplicate', 'rejected'))),
            ('forgeries', (SELECT min(n.finished_at) FROM receipt_notifications n
                           WHERE n.finished_at < pg_catalog.now() - $5::float8 * interval '1 second'
                             AND n.state = 'rejected' AND n.reason = 'invalid_signature')),
            ('refund_requests', (SELECT min(r.respond_by) FROM receipt_refund_requests r
                                 WHERE r.respond_by < pg_catalog.now() - $6::float8 * interval '1 second'
                                   AND r.state <> 'pending')),
            ('consumption', (SELECT c.updated_at FROM receipt_consumption c
                             WHERE c.updated_at < pg_catalog.now() - $7::float8 * interval '1 second'
                               AND NOT EXISTS (SELECT FROM receipt_refund_requests r
                                               WHERE r.transaction_id = c.transaction_id)
                             ORDER BY c.updated_at LIMIT 1))
        ) AS k(kind, oldest)
        """

    /// One retention batch with `retention`'s periods; returns the rows cleared or deleted (0 when nothing is left).
    public func prune(_ retention: Retention, batch: Int = 5000) throws -> Int {
        try prune(
            clearReceiptsAfterSeconds: retention.clearReceiptsAfterSeconds,
            deleteAfterSeconds: retention.deleteAfterSeconds,
            deleteForgeriesAfterSeconds: retention.deleteForgeriesAfterSeconds,
            deleteEventsAfterSeconds: retention.deleteEventsAfterSeconds,
            deleteNotificationsAfterSeconds: retention.deleteNotificationsAfterSeconds,
            deleteRefundRequestsAfterSeconds: retention.deleteRefundRequestsAfterSeconds,
            batch: batch
        )
    }
}
