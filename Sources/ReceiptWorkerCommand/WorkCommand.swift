import AppStoreClient
import ArgumentParser
import CurlHTTP
import Dispatch
import Foundation
import Logging
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

        let transport = try CurlMultiTransport(
            configuration: .init(maxTotalConnections: max(64, configuration.maxInFlight))
        )
        defer { transport.shutdown() }
        let client = try AppStoreClient(configuration: appStore, transport: transport)
        let engine = Worker(configuration: configuration, databaseURL: databaseURL, client: client, logger: logger)
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
