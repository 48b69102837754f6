import Foundation
import PostgresClient
import ReceiptRules

/// The queue's operations, each one statement calling a function of sql/functions.
/// Wraps one connection: like the connection, a store is used by one thread at a time.
public final class JobStore {
    public let connection: PostgresConnection
    private var prepared: Set<String> = []

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    public convenience init(url: String) throws {
        self.init(connection: try PostgresConnection(url))
    }

    // MARK: Workers

    /// Claims up to `limit` runnable jobs with a fresh lease.
    public func claim(worker: String, limit: Int, leaseSeconds: Double) throws -> [ClaimedJob] {
        let rows = try run(
            "claim", "SELECT * FROM receipt_claim($1, $2, $3)",
            [worker, String(limit), String(leaseSeconds)]
        )
        var jobs: [ClaimedJob] = []
        jobs.reserveCapacity(rows.rows.count)
        for index in rows.rows.indices {
            guard let id = rows.int64(index, "id"), let token = rows[index, "lease_token"],
                let kind = rows[index, "kind"].flatMap(JobKind.init(rawValue:))
            else {
                throw QueueError(.unexpectedAnswer, "receipt_claim returned a row without id, lease_token or kind")
            }
            let order = OrderContext(
                jobId: id,
                orderId: rows[index, "order_id"] ?? "",
                userId: rows[index, "user_id"] ?? "",
                productId: rows[index, "product_id"] ?? "",
                clientTransactionId: rows[index, "transaction_id"],
                bundleId: rows[index, "bundle_id"] ?? "",
                orderCreatedAtMs: rows.int64(index, "order_created_at_ms"),
                jobCreatedAtMs: rows.int64(index, "created_at_ms") ?? 0,
                attempt: Int(rows.int64(index, "attempts") ?? 1),
                appAccountToken: rows[index, "app_account_token"]
            )
            jobs.append(ClaimedJob(
                id: id,
                leaseToken: token,
                kind: kind,
                order: order,
                receiptData: rows[index, "receipt_data"],
                signedTransaction: rows[index, "signed_transaction"],
                receiptHash: String((rows[index, "receipt_hash"] ?? "").prefix(12))
            ))
        }
        return jobs
    }

    /// Extends the leases of jobs still in hand; returns how many were still this worker's.
    @discardableResult
    public func renewLeases(worker: String, leases: [Lease], leaseSeconds: Double) throws -> Int {
        guard !leases.isEmpty else { return 0 }
        let rows = try run(
            "renew", "SELECT receipt_renew_leases($1, $2::bigint[], $3::uuid[], $4) AS renewed",
            [worker, PostgresArray.int64(leases.map(\.jobId)), PostgresArray.text(leases.map(\.token)),
             String(leaseSeconds)]
        )
        return Int(rows.int64(0, "renewed") ?? 0)
    }

    /// Gives jobs back to the queue without counting the attempt (graceful shutdown).
    @discardableResult
    public func release(_ leases: [Lease]) throws -> Int {
        guard !leases.isEmpty else { return 0 }
        let rows = try run(
            "release", "SELECT receipt_release($1::bigint[], $2::uuid[]) AS released",
            [PostgresArray.int64(leases.map(\.jobId)), PostgresArray.text(leases.map(\.token))]
        )
        return Int(rows.int64(0, "released") ?? 0)
    }

    /// What happened to one job when its outcome was written.
    public struct Completion: Sendable, Hashable {
        /// The job's state after the write, as `receipt_complete()` reports it.
        public enum State: String, Sendable, Hashable {
            case verified, rejected, retry, dead
            /// The lease was no longer this worker's (rescued, or finished elsewhere): nothing was written.
            case lost

            /// A verdict the API layer receives: verified, rejected or dead.
            public var isFinal: Bool { self == .verified || self == .rejected || self == .dead }
        }

        public var jobId: Int64
        public var state: State
        public var reason: String?
        public var creditKey: String?
    }

    /// Writes many outcomes in one statement and one transaction. Each job is guarded by its lease.
    public func complete(_ outcomes: [JobOutcome]) throws -> [Completion] {
        guard !outcomes.isEmpty else { return [] }
        let payload = try JobOutcome.jsonArray(outcomes)
        #if DEBUG
        let reference = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(outcomes)) as? NSArray
        let written = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? NSArray
        assert(reference != nil && reference == written, "JobOutcome.jsonArray differs from JSONEncoder: \(payload)")
        #endif
        let rows = try run("complete", "SELECT * FROM receipt_complete($1::jsonb)", [payload])
        return try rows.rows.indices.map { index in
            guard let state = rows[index, "state"].flatMap(Completion.State.init(rawValue:)) else {
                throw QueueError(
                    .unexpectedAnswer, "receipt_complete returned the state \(rows[index, "state"] ?? "NULL")"
                )
            }
            return Completion(
                jobId: rows.int64(index, "job_id") ?? 0,
                state: state,
                reason: rows[index, "reason"],
                creditKey: rows[index, "credit_key"]
            )
        }
    }

    // MARK: Scheduler

    public struct SweepResult: Sendable, Hashable {
        public var promoted: Int
        public var rescued: Int
        public var dead: Int
        public var total: Int { promoted + rescued + dead }

        public init(promoted: Int, rescued: Int, dead: Int) {
            self.promoted = promoted
            self.rescued = rescued
            self.dead = dead
        }
    }

    /// One scheduler pass: due retries back to the queue, expired leases rescued, exhausted jobs dead.
    public func sweep(maxAttempts: Int, limit: Int = 1000) throws -> SweepResult {
        let rows = try run("sweep", "SELECT * FROM receipt_sweep($1, $2)", [String(maxAttempts), String(limit)])
        return SweepResult(
            promoted: Int(rows.int64(0, "promoted") ?? 0),
            rescued: Int(rows.int64(0, "rescued") ?? 0),
            dead: Int(rows.int64(0, "dead") ?? 0)
        )
    }

    /// One retention batch; returns the rows cleared or deleted (0 when nothing is left to do). Rejected forgeries
    /// go `deleteForgeriesAfterSeconds` after they were rejected (7 days by default; nil: as other rejected
    /// notifications). Delivered events, finished notifications and settled refund requests (with the consumption
    /// records no request needs) go after their own period, nil: `deleteAfterSeconds`; the database keeps
    /// notifications and refund requests 180 days at least (sql/functions/receipt_prune.sql).
    public func prune(
        clearReceiptsAfterSeconds: Double, deleteAfterSeconds: Double,
        deleteForgeriesAfterSeconds: Double? = 7 * 86_400, deleteEventsAfterSeconds: Double? = nil,
        deleteNotificationsAfterSeconds: Double? = nil, deleteRefundRequestsAfterSeconds: Double? = nil,
        batch: Int = 5000
    ) throws -> Int {
        let rows = try connection.query(
            """
            SELECT receipt_prune(make_interval(secs => $1), make_interval(secs => $2), $3,
                                 make_interval(secs => $4), make_interval(secs => $5), make_interval(secs => $6),
                                 make_interval(secs => $7)) AS pruned
            """,
            [String(clearReceiptsAfterSeconds), String(deleteAfterSeconds), String(batch),
             deleteForgeriesAfterSeconds.map { String($0) }, deleteEventsAfterSeconds.map { String($0) },
             deleteNotificationsAfterSeconds.map { String($0) }, deleteRefundRequestsAfterSeconds.map { String($0) }]
        )
        return Int(rows.int64(0, "pruned") ?? 0)
    }

    /// Jobs not final yet (queued, running or retry), but for expected orders (`expect_purchase()`), which wait for
    /// Apple rather than for a worker: a drain does not wait out their deadlines.
    public func unfinishedCount() throws -> Int {
        let rows = try run(
            "unfinished",
            """
            SELECT (SELECT count(*) FROM receipt_jobs
                    WHERE state IN ('queued', 'running', 'retry') AND NOT (state = 'queued' AND kind = 'expected'))
                 + (SELECT count(*) FROM receipt_notifications WHERE state IN ('queued', 'running', 'retry')) AS n
            """,
            []
        )
        return Int(rows.int64(0, "n") ?? 0)
    }

    // MARK: API layer and operators

    /// `enqueue_receipt()`; returns the job id.
    public func enqueue(
        receiptData: String,
        orderId: String,
        userId: String,
        productId: String,
        transactionId: String? = nil,
        bundleId: String? = nil,
        orderCreatedAt: String? = nil
    ) throws -> Int64 {
        let rows = try run(
            "enqueue", "SELECT enqueue_receipt($1, $2, $3, $4, $5, $6, $7::timestamptz) AS id",
            [receiptData, orderId, userId, productId, transactionId, bundleId, orderCreatedAt]
        )
        guard let id = rows.int64(0, "id") else { throw QueueError(.unexpectedAnswer, "enqueue_receipt returned no id") }
        return id
    }

    /// `enqueue_transaction()`: a StoreKit 2 signed transaction, or a transaction id alone; returns the job id.
    public func enqueueTransaction(
        signedTransaction: String?,
        transactionId: String? = nil,
        orderId: String,
        userId: String,
        productId: String,
        bundleId: String? = nil,
        orderCreatedAt: String? = nil,
        appAccountToken: String? = nil
    ) throws -> Int64 {
        let rows = try run(
            "enqueue_transaction",
            """
            SELECT enqueue_transaction(signed_transaction => $1, transaction_id => $2, order_id => $3, user_id => $4,
                                       product_id => $5, bundle_id => $6, order_created_at => $7::timestamptz,
                                       app_account_token => $8::uuid) AS id
            """,
            [signedTransaction, transactionId, orderId, userId, productId, bundleId, orderCreatedAt, appAccountToken]
        )
        guard let id = rows.int64(0, "id") else {
            throw QueueError(.unexpectedAnswer, "enqueue_transaction returned no id")
        }
        return id
    }

    /// A job's state and, when it is rejected or dead, why: what `enqueue` reports back at once.
    public func verdict(jobId: Int64) throws -> (state: String, reason: String?, error: String?)? {
        let rows = try connection.query(
            "SELECT state, reason, last_error FROM receipt_jobs WHERE id = $1", [String(jobId)]
        )
        guard let state = rows[0, "state"] else { return nil }
        return (state, rows[0, "reason"], rows[0, "last_error"])
    }

    /// Registers the apps this service verifies for (APPLE_BUNDLE_IDS).
    public func registerApps(_ bundleIds: [String]) throws {
        guard !bundleIds.isEmpty else { return }
        _ = try connection.query(
            "INSERT INTO receipt_apps (bundle_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
            [PostgresArray.text(bundleIds)]
        )
    }

    /// Requeues one job (`receipt_requeue`).
    public func requeue(jobId: Int64, note: String?) throws {
        _ = try connection.query("SELECT receipt_requeue($1, $2)", [String(jobId), note])
    }

    /// Requeues every dead job; returns how many.
    public func requeueDead(note: String?) throws -> Int {
        let rows = try connection.query("SELECT receipt_requeue_dead($1) AS n", [note])
        return Int(rows.int64(0, "n") ?? 0)
    }

    /// Requeues every dead App Store Server Notification (`receipt_requeue_dead_notifications`); returns how many.
    public func requeueDeadNotifications(note: String?) throws -> Int {
        let rows = try connection.query("SELECT receipt_requeue_dead_notifications($1) AS n", [note])
        return Int(rows.int64(0, "n") ?? 0)
    }

    /// Runs a hot statement as a prepared statement (prepared on first use; the connection re-prepares after a
    /// reconnect).
    private func run(_ name: String, _ sql: String, _ parameters: [String?]) throws -> PostgresResult {
        let statement = "rw_" + name
        if !prepared.contains(statement) {
            try connection.prepare(statement, sql)
            prepared.insert(statement)
        }
        return try connection.executePrepared(statement, parameters)
    }
}
