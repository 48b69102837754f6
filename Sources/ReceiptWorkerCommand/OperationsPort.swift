import AppStoreClient
import ArgumentParser
import CurlHTTP
import Dispatch
import Foundation
import Logging
import Observability
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Workers

/// The operations port of `work` (METRICS_PORT): the HTTP server, the readiness check and the queue gauges' poller,
/// which share one database connection of their own.
struct OperationsPort {
    let server: MetricsServer
    let poller: PeriodicTask
    let database: OperationsDatabase

    static func start(
        host: String, port: Int, metrics: ReceiptMetrics, databaseURL: String, sqlDirectory: String?,
        environment: [String: String], logger: Logger, beforeScrape: @escaping @Sendable () -> Void
    ) throws -> OperationsPort {
        let migrator: Result<Migrator, QueueError>
        do {
            let directory = try Migrator.locateDirectory(explicit: sqlDirectory, environment: environment)
            migrator = .success(try Migrator(directory: directory))
        } catch {
            logger.error("readiness cannot check migrations: /readyz will answer 503", metadata: ["error": "\(error)"])
            migrator = .failure(error)
        }
        let database = OperationsDatabase(url: databaseURL, migrator: migrator)
        let readiness = ReadinessProbe(subject: "the database", observer: { metrics.setReady($0.isReady) }) {
            database.readiness()
        }
        let server: MetricsServer
        do {
            server = try MetricsServer.start(
                host: host, port: port, registry: metrics.registry, readiness: readiness, beforeScrape: beforeScrape,
                logger: Logger(label: "receipt-worker.metrics")
            )
        } catch {
            database.close()
            throw CommandFailure(error.description)
        }
        let poller = PeriodicTask(label: "receipt-worker.queue-gauges", interval: .seconds(5)) {
            _ = readiness.evaluate()
            do {
                metrics.setQueue(try database.queueSummary())
            } catch {
                metrics.recordQueuePollFailure()
                logger.debug("queue summary read failed", metadata: ["error": "\(error)"])
            }
        }
        return OperationsPort(server: server, poller: poller, database: database)
    }

    func stop() {
        poller.stop()
        server.stop()
        database.close()
    }
}

/// The connection behind /readyz and the queue gauges: never one of the worker's, opened on first use, dropped when
/// it fails and opened again on the next call. The readiness check and the poller take turns on it.
/// `@unchecked Sendable`: `connection` is only touched while `lock` is held, so one thread at a time uses it.
final class OperationsDatabase: @unchecked Sendable {
    private let url: String
    private let migrator: Result<Migrator, QueueError>
    private let lock = NSLock()
    private var connection: PostgresConnection?

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

extension WorkerEvents {
    /// Events recorded into `metrics`.
    static func recording(into metrics: ReceiptMetrics) -> WorkerEvents {
        WorkerEvents(
            appleCall: { call in
                metrics.recordAppleCall(
                    endpoint: call.endpoint.rawValue, status: call.metricStatus, seconds: call.seconds
                )
            },
            jobWritten: { completion, outcome, _ in
                metrics.recordWritten(
                    WrittenOutcome(
                        state: completion.state, reason: completion.reason, kind: outcome.kind.rawValue,
                        retryCause: outcome.kind == .retry ? outcome.retryCause : nil,
                        environment: outcome.environment?.rawValue,
                        appleStatus: outcome.kind == .configError ? outcome.configurationErrorLabel : nil
                    )
                )
            },
            swept: { result in metrics.recordSweep(rescued: result.rescued, dead: result.dead) }
        )
    }
}
