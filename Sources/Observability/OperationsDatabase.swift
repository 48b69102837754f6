import Foundation
import PostgresClient
import ReceiptQueue

/// The connection behind /readyz and the queue gauges: never one of the worker's, opened on first use, dropped when
/// it fails and opened again on the next call. The readiness check and the poller take turns on it.
/// `@unchecked Sendable`: `connection` is only touched while `lock` is held, so one thread at a time uses it.
final class OperationsDatabase: @unchecked Sendable {
    private let url: String
    private let migrator: Result<Migrator, QueueError>
    private let lock = NSLock()
    private var connection: PostgresConnection?
    /// The highest receipt_notifications id counted so far (nil before the first sample).
    private var lastNotificationId: Int64?

    init(url: String, migrator: Result<Migrator, QueueError>) {
        self.url = url
        self.migrator = migrator
    }

    /// Ready when the database answers `SELECT 1` and no migration is pending.
    func readiness() -> Readiness {
        let pending: [String]
        do {
            let migrator = try migrator.get()
            pending = try withConnection { connection in
                _ = try connection.query("SELECT 1")
                return try migrator.pending(connection)
            }
        } catch let error as PostgresError {
            return .notReady("database: \(error)")
        } catch {
            return .notReady("\(error)")
        }
        guard pending.isEmpty else {
            return .notReady("migrations not applied: \(pending.joined(separator: ", ")); run `receipt-worker migrate`")
        }
        return .ready
    }

    /// Jobs and the oldest job's age per state, from `receipt_queue_summary`.
    func queueSummary() throws -> [QueueSample] {
        let rows = try withConnection { connection in
            try connection.query(
                """
                SELECT state, jobs, coalesce(extract(epoch FROM now() - oldest_created_at), 0)::float8 AS age
                FROM receipt_queue_summary
                """
            )
        }
        return rows.rows.indices.map { index in
            QueueSample(
                state: rows[index, "state"] ?? "unknown", jobs: Int(rows.int64(index, "jobs") ?? 0),
                oldestAgeSeconds: Double(rows[index, "age"] ?? "") ?? 0
            )
        }
    }

    /// Notifications received since the previous call (none on the first: it only notes where the table is), by
    /// source, read through the primary key from the last id seen; and those not finished, with the oldest one's age.
    func notificationSample() throws -> NotificationSample {
        try withConnection { connection in
            let waiting = try connection.query(
                """
                SELECT count(*) AS waiting, coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8 AS age
                FROM receipt_notifications WHERE state IN ('queued', 'retry', 'running')
                """
            )
            var received: [String: Int] = [:]
            if let last = lastNotificationId {
                let rows = try connection.query(
                    "SELECT source, count(*) AS n, max(id) AS last FROM receipt_notifications WHERE id > $1 GROUP BY source",
                    [String(last)]
                )
                for index in rows.rows.indices {
                    received[rows[index, "source"] ?? "unknown", default: 0] += Int(rows.int64(index, "n") ?? 0)
                    lastNotificationId = max(lastNotificationId ?? 0, rows.int64(index, "last") ?? 0)
                }
            } else {
                let rows = try connection.query("SELECT coalesce(max(id), 0) AS last FROM receipt_notifications")
                lastNotificationId = rows.int64(0, "last") ?? 0
            }
            return NotificationSample(
                received: received, waiting: Int(waiting.int64(0, "waiting") ?? 0),
                oldestWaitingAgeSeconds: Double(waiting[0, "age"] ?? "") ?? 0
            )
        }
    }

    /// Closes the connection, unless a check is still using it (a database that stopped answering): then the
    /// process's exit closes it, rather than shutdown waiting on that check.
    func close() {
        guard lock.try() else { return }
        defer { lock.unlock() }
        connection?.close()
        connection = nil
    }

    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try lock.withLock {
            do {
                let open = try connection ?? PostgresConnection(url)
                connection = open
                return try body(open)
            } catch let error as PostgresError where error.isConnectionProblem {
                connection?.close()
                connection = nil
                throw error
            }
        }
    }
}
