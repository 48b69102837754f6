import AppStoreClient
import ArgumentParser
import CurlHTTP
import Foundation
import Logging
import Observability
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport
import Workers

struct WorkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Run workers and the built-in scheduler until SIGTERM/SIGINT (or, with --drain, until every job is final)."
    )

    @OptionGroup var worker: WorkerOptions
    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Exit 0 once every job is final (verified, rejected or dead), waiting for retries (not for expected orders, which wait for Apple until their deadline).")
    var drain = false

    @Flag(help: "Do not run the scheduler in this process (run `receipt-worker sweep` from cron instead).")
    var noScheduler = false

    @Option(help: "Seconds after SIGTERM/SIGINT by which the process exits even when the database does not answer, leaving the jobs in hand to their leases (SHUTDOWN_TIMEOUT_SECONDS). Default: SHUTDOWN_GRACE_SECONDS + 15.")
    var shutdownTimeout: Double?

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
        // Signals first: a SIGTERM during start-up (waiting for the database, say) must stop cleanly, not kill.
        // Whether a signal came, and the worker to stop once there is one.
        let shutdown = ConditionLock<(requested: Bool, worker: Worker?)>((false, nil))
        let stopTimeout = ShutdownTimeout(logger: logger)
        let signals = try SignalHandlers([SIGTERM, SIGINT]) { signal in
            logger.notice("signal received", metadata: ["signal": "\(signal)"])
            stopTimeout.begin()
            shutdown.withLock { shutdown in
                shutdown.requested = true
                return shutdown.worker
            }?.shutdown()
        }
        defer { signals.cancel() }
        try settings.requireAll([
            { try settings.databaseURL(as: .worker) }, { try settings.requiredBundleIds(worker.bundleIds) },
            { try settings.needsSharedSecret() ? try settings.sharedSecret() : "" },
        ])
        var configuration = try worker.workerConfiguration(settings)
        let timeout = try settings.number(
            "SHUTDOWN_TIMEOUT_SECONDS", flag: shutdownTimeout, default: configuration.shutdownGraceSeconds + 15
        )
        guard timeout > configuration.shutdownGraceSeconds, timeout <= 86_400 else {
            throw ConfigurationError(
                .outOfRange,
                "SHUTDOWN_TIMEOUT_SECONDS must be longer than SHUTDOWN_GRACE_SECONDS "
                    + "(\(configuration.shutdownGraceSeconds)) and at most 86400 (a day), got \(timeout)"
            )
        }
        stopTimeout.configure(seconds: timeout)
        configuration.drain = drain
        configuration.runScheduler = !noScheduler
        let databaseURL = try settings.databaseURL(as: .worker)
        let serverAPIConfiguration = try settings.serverAPIConfiguration(
            timeoutSeconds: try settings.number("APPLE_TIMEOUT_SECONDS", flag: worker.appleTimeout, default: 15, minimum: 0.1)
        )
        configuration.receiptSource = try settings.receiptSource(serverAPI: serverAPIConfiguration != nil)
        configuration.confirmSignedTransactions = try settings.confirmSignedTransactions()
        configuration.requireAccountToken = try settings.toggle(Settings.requireAccountTokenSetting, default: false)
        configuration.reconcile = try settings.reconcileSchedule()
        // verifyReceipt, the only user of the shared secret, is set up when receipts go to it, or when a secret is
        // given anyway (then checked as ever).
        let usesVerifyReceipt = configuration.receiptSource == .verifyReceipt || settings.hasSharedSecret
        let appStore = usesVerifyReceipt ? try worker.appStoreConfiguration(settings) : nil
        configuration.maxReceiptBytes = try settings.integer(
            "MAX_RECEIPT_BYTES", flag: nil, default: 1 << 20, minimum: 1
        )
        // Rejected forgeries go after 7 days even when no other retention is set: anyone can send them.
        configuration.retention = try settings.retention()
        do {
            try configuration.validate(appleTimeoutSeconds: appStore?.timeoutSeconds ?? serverAPIConfiguration?.timeoutSeconds ?? 15)
        } catch {
            throw ConfigurationError(error.code == .missing ? .missing : .outOfRange, error.description)
        }
        let metricsPort = try settings.integer("METRICS_PORT", flag: metricsPort, default: 0, minimum: 0)
        guard metricsPort <= 65_535 else {
            throw ConfigurationError(.outOfRange, "METRICS_PORT must be at most 65535, got \(metricsPort)")
        }
        let metrics = metricsPort > 0 ? ReceiptMetrics(version: Version.current) : nil

        var appleURLs: [(setting: String, url: String)] = []
        if let appStore {
            appleURLs += [("APPLE_PRODUCTION_URL", appStore.productionURL), ("APPLE_SANDBOX_URL", appStore.sandboxURL)]
        }
        if let serverAPIConfiguration {
            appleURLs += [
                ("APPSTORE_API_URL", serverAPIConfiguration.productionURL),
                ("APPSTORE_SANDBOX_API_URL", serverAPIConfiguration.sandboxURL),
            ]
        }
        let transportConfiguration = try settings.appleTransport(
            maxInFlight: configuration.maxInFlight, appleURLs: appleURLs
        )
        // The sockets to Apple (a socket per call with HTTP/1.1; over HTTP/2 the connection cap, which a fall-back to
        // HTTP/1.1 cannot exceed either); the database connections, the metrics port's connections and the libraries
        // need a few more files.
        let openFiles = OpenFileLimit.raiseToHardLimit()
        let demand = OpenFileLimit.demand(
            of: transportConfiguration, otherFiles: 64 + (metricsPort > 0 ? MetricsServer.maxConnections : 0)
        )
        guard demand.files <= openFiles else {
            throw ConfigurationError(
                .resourceLimit,
                "MAX_IN_FLIGHT \(configuration.maxInFlight) needs about \(demand.files) open files (\(demand.reason)), "
                    + "and this process may open \(openFiles) (its hard limit): lower MAX_IN_FLIGHT, use HTTP/2 "
                    + "(APPLE_HTTP_VERSION=2, https URLs), or raise the limit (LimitNOFILE= in the systemd unit, "
                    + "ulimit -n, the container runtime's nofile limit)"
            )
        }
        let transport = try CurlMultiTransport(configuration: transportConfiguration)
        defer { transport.shutdown() }
        let client = try appStore.map { try AppStoreClient(configuration: $0, transport: transport) }
        let serverAPI = try serverAPIConfiguration.map { try ServerAPIClient(configuration: $0, transport: transport) }
        let engine = Worker(
            configuration: configuration, databaseURL: databaseURL, client: client,
            signedData: try settings.signedDataVerifier(transport: transport), serverAPI: serverAPI, logger: logger,
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
        // A database that refuses us for good (exit 2), or lacks the schema (exit 3), ends the start here; an
        // outage is waited for.
        let reached = try DatabaseCheck.beforeWork(
            url: databaseURL, sqlDirectory: sqlDir, environment: settings.environment, logger: logger,
            stopRequested: { shutdown.withLock { $0.requested } }
        )
        stopTimeout.watch(engine)
        let requestedEarlier = shutdown.withLock { shutdown in
            shutdown.worker = engine
            return shutdown.requested
        }
        if requestedEarlier { engine.shutdown() }
        // Stopped while waiting for the database: the worker would try it once more before seeing the stop.
        guard reached else {
            logger.info(
                "worker stopped before the database was reached", metadata: ["worker": "\(configuration.workerId)"]
            )
            return
        }
        if !shutdown.withLock({ $0.requested }) {
            try registerApps(configuration.rules.bundleIds, databaseURL: databaseURL, logger: logger)
        }
        let replay = try notificationReplay(
            serverAPI, settings: settings, bundleIds: configuration.rules.bundleIds.sorted(), databaseURL: databaseURL,
            logger: logger
        )
        let replayThread = try replay?.start()
        defer {
            replay?.stop()
            replayThread?.detach()
        }
        try engine.run()
    }

    /// The periodic replay of notifications Apple could not deliver (NOTIFICATIONS_REPLAY_MINUTES; 60 by default
    /// when the App Store Server API key is configured, 0 for none).
    private func notificationReplay(
        _ serverAPI: ServerAPIClient?, settings: Settings, bundleIds: [String], databaseURL: String, logger: Logger
    ) throws -> NotificationReplayLoop? {
        let minutes = try settings.number("NOTIFICATIONS_REPLAY_MINUTES", flag: nil, default: 60)
        guard let serverAPI, minutes > 0, !bundleIds.isEmpty else { return nil }
        return NotificationReplayLoop(
            replay: NotificationReplay(client: serverAPI, bundleIds: bundleIds, environments: [.production, .sandbox]),
            databaseURL: databaseURL, intervalSeconds: minutes * 60, logger: logger
        )
    }

    /// Registers APPLE_BUNDLE_IDS so enqueue_receipt() accepts them, with APPSTORE_APP_APPLE_IDS for production
    /// notifications; a database not reachable yet is left to
    /// the worker's own waiting.
    private func registerApps(_ ids: Set<String>, databaseURL: String, logger: Logger) throws {
        do {
            let store = JobStore(connection: try connect(databaseURL))
            try store.registerApps(ids.sorted())
            try store.registerAppAppleIds(try Settings().appAppleIds(bundleIds: ids.sorted()))
        } catch let error as ConfigurationError {
            throw error
        } catch {
            logger.warning("could not register APPLE_BUNDLE_IDS yet", metadata: ["error": "\(error)"])
        }
    }
}
