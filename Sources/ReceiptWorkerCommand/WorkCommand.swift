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

struct WorkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Run workers and the built-in scheduler until SIGTERM/SIGINT (or, with --drain, until every job is final)."
    )

    @OptionGroup var worker: WorkerOptions
    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Exit 0 once every job is final (verified, rejected or dead), waiting for retries.")
    var drain = false

    @Flag(help: "Do not run the scheduler in this process (run `receipt-worker sweep` from cron instead).")
    var noScheduler = false

    @Option(help: "Serve /metrics, /healthz and /readyz on this port (METRICS_PORT). Default: 0, off.")
    var metricsPort: Int?

    @Option(help: "Address the metrics port binds to (METRICS_HOST). Default: 0.0.0.0.")
    var metricsHost: String?

    @Option(help: "The SQL files /readyz checks are applied (RECEIPT_WORKER_SQL_DIR). Default: found beside the binary.")
    var sqlDir: String?

    func run() throws {
        let settings = Settings()
        try logging.bootstrap(settings)
        let logger = Logger(label: "receipt-worker")
        var configuration = try worker.workerConfiguration(settings)
        configuration.drain = drain
        configuration.runScheduler = !noScheduler
        let databaseURL = try settings.databaseURL()
        let appStore = try worker.appStoreConfiguration(settings)
        try configuration.validate(appleTimeoutSeconds: appStore.timeoutSeconds)
        let metricsPort = try settings.integer("METRICS_PORT", flag: metricsPort, default: 0, minimum: 0)
        guard metricsPort <= 65_535 else {
            throw ConfigurationError("METRICS_PORT must be at most 65535, got \(metricsPort)")
        }
        let metrics = metricsPort > 0 ? ReceiptMetrics() : nil

        let transport = try CurlMultiTransport(
            configuration: .init(maxTotalConnections: max(64, configuration.maxInFlight))
        )
        defer { transport.shutdown() }
        let client = try AppStoreClient(configuration: appStore, transport: transport)
        let engine = Worker(
            configuration: configuration, databaseURL: databaseURL, client: client, logger: logger,
            events: metrics.map(WorkerEvents.recording(into:)) ?? WorkerEvents()
        )
        let operations = try metrics.map { metrics in
            try OperationsPort.start(
                host: settings.string("METRICS_HOST", flag: metricsHost, default: "0.0.0.0"), port: metricsPort,
                metrics: metrics, databaseURL: databaseURL, sqlDirectory: sqlDir, environment: settings.environment,
                logger: logger
            ) {
                metrics.setAppleRequestsInFlight(transport.inFlight)
                metrics.setCircuitBreaker(CircuitBreakerGauge(name: engine.circuitBreakerState.rawValue) ?? .closed)
            }
        }
        defer { operations?.stop() }
        let signals = SignalHandlers([SIGTERM, SIGINT]) { signal in
            logger.notice("signal received", metadata: ["signal": "\(signal)"])
            engine.shutdown()
        }
        defer { signals.cancel() }
        try registerApps(configuration.rules.bundleIds, databaseURL: databaseURL, logger: logger)
        try engine.run()
    }

    /// Registers APPLE_BUNDLE_IDS so enqueue_receipt() accepts them; a database not reachable yet is left to
    /// the worker's own waiting.
    private func registerApps(_ ids: Set<String>, databaseURL: String, logger: Logger) throws {
        do {
            try JobStore(connection: try connect(databaseURL)).registerApps(ids.sorted())
        } catch let error as ConfigurationError {
            throw error
        } catch {
            logger.warning("could not register APPLE_BUNDLE_IDS yet", metadata: ["error": "\(error)"])
        }
    }
}

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

/// The options shared by `work` and `demo`.
struct WorkerOptions: ParsableArguments {
    @Option(help: "Comma-separated bundle ids of your apps (APPLE_BUNDLE_IDS).")
    var bundleIds: String?
    @Option(help: "verifyReceipt production URL (APPLE_PRODUCTION_URL).")
    var productionURL: String?
    @Option(help: "verifyReceipt sandbox URL (APPLE_SANDBOX_URL).")
    var sandboxURL: String?
    @Option(help: "Seconds allowed for one Apple call (APPLE_TIMEOUT_SECONDS). Default: 15.")
    var appleTimeout: Double?
    @Option(help: "Lease length in seconds, renewed while calls are in flight (LEASE_SECONDS). Default: 60.")
    var leaseSeconds: Double?
    @Option(help: "First retry delay in seconds, doubling per attempt (RETRY_BASE_SECONDS). Default: 30.")
    var retryBase: Double?
    @Option(help: "Longest retry delay in seconds (RETRY_MAX_SECONDS). Default: 3600.")
    var retryMax: Double?
    @Option(help: "Attempts before a job is dead (MAX_ATTEMPTS). Default: 80, about three days.")
    var maxAttempts: Int?
    @Option(help: "Apple requests in flight in this process (MAX_IN_FLIGHT). Default: 512.")
    var maxInFlight: Int?
    @Option(help: "accept, reject or allowlist (SANDBOX_POLICY). Default: accept.")
    var sandboxPolicy: String?
    @Option(help: "User ids allowed sandbox purchases under allowlist (SANDBOX_ALLOWED_USERS).")
    var sandboxAllowedUsers: String?
    @Option(help: "Seconds to wait for calls in flight on SIGTERM before giving jobs back (SHUTDOWN_GRACE_SECONDS). Default: 20.")
    var shutdownGrace: Double?
    @Option(help: "How long an idle worker waits for NOTIFY before polling (POLL_INTERVAL_SECONDS). Default: 1.")
    var pollInterval: Double?

    func workerConfiguration(_ settings: Settings) throws -> WorkerConfiguration {
        let rules = RulesConfiguration(
            bundleIds: Set(try settings.requiredBundleIds(bundleIds)),
            sandboxPolicy: try settings.sandboxPolicy(sandboxPolicy, allowedUsers: sandboxAllowedUsers)
        )
        let retry = RetryPolicy(
            baseSeconds: try settings.number("RETRY_BASE_SECONDS", flag: retryBase, default: 30),
            maxSeconds: try settings.number("RETRY_MAX_SECONDS", flag: retryMax, default: 3600),
            maxAttempts: try settings.integer("MAX_ATTEMPTS", flag: maxAttempts, default: 80, minimum: 1)
        )
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        return WorkerConfiguration(
            workerId: "\(host)-\(getpid())-\(suffix)",
            maxInFlight: try settings.integer("MAX_IN_FLIGHT", flag: maxInFlight, default: 512, minimum: 1),
            leaseSeconds: try settings.number("LEASE_SECONDS", flag: leaseSeconds, default: 60, minimum: 2),
            pollIntervalSeconds: try settings.number(
                "POLL_INTERVAL_SECONDS", flag: pollInterval, default: 1, minimum: 0.01
            ),
            retry: retry,
            rules: rules,
            shutdownGraceSeconds: try settings.number("SHUTDOWN_GRACE_SECONDS", flag: shutdownGrace, default: 20)
        )
    }

    func appStoreConfiguration(_ settings: Settings) throws -> AppStoreConfiguration {
        let configuration = AppStoreConfiguration(
            productionURL: settings.string(
                "APPLE_PRODUCTION_URL", flag: productionURL, default: AppStoreConfiguration.appleProductionURL
            ),
            sandboxURL: settings.string(
                "APPLE_SANDBOX_URL", flag: sandboxURL, default: AppStoreConfiguration.appleSandboxURL
            ),
            sharedSecret: try settings.sharedSecret(),
            timeoutSeconds: try settings.number("APPLE_TIMEOUT_SECONDS", flag: appleTimeout, default: 15, minimum: 0.1)
        )
        do {
            try configuration.validate()
        } catch {
            throw ConfigurationError(error.description)
        }
        return configuration
    }
}

/// SIGTERM/SIGINT through Dispatch: the default action is switched off first (on Linux, libdispatch only
/// forwards a signal after the source is registered), then each signal calls `handler` on a private queue.
/// `@unchecked Sendable`: `sources` is immutable after init, and Dispatch sources are thread-safe.
final class SignalHandlers: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "receipt-worker.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
