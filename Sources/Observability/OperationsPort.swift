import Logging
import ReceiptQueue

/// The operations port of `work` (METRICS_PORT): the HTTP server, the readiness check and the queue gauges' poller,
/// which share one database connection of their own.
public struct OperationsPort {
    let server: MetricsServer
    let poller: PeriodicTask
    let database: OperationsDatabase

    /// Serves /metrics, /healthz and /readyz on `host`:`port`, and polls `receipt_queue_summary` for the queue gauges
    /// every 5 s. /readyz is ready when the database answers and every migration in `sqlDirectory` (or the one
    /// found from `environment`) is applied. `beforeScrape` runs before each /metrics answer, to refresh gauges.
    public static func start(
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
            throw error
        }
        let poller = PeriodicTask(label: "receipt-worker.queue-gauges", interval: .seconds(5)) {
            _ = readiness.evaluate()
            do {
                metrics.setQueue(try database.queueSummary())
                metrics.setNotifications(try database.notificationSample())
            } catch {
                metrics.recordQueuePollFailure()
                logger.debug("queue summary read failed", metadata: ["error": "\(error)"])
            }
        }
        return OperationsPort(server: server, poller: poller, database: database)
    }

    /// Stops the poller and the server, and closes the connection.
    public func stop() {
        poller.stop()
        server.stop()
        database.close()
    }
}
