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
    @Option(help: "grant or reject purchases shared through Family Sharing (FAMILY_SHARING). Default: grant.")
    var familySharing: String?
    @Option(help: "Seconds to wait for calls in flight on SIGTERM before giving jobs back (SHUTDOWN_GRACE_SECONDS). Default: 20.")
    var shutdownGrace: Double?
    @Option(help: "How long an idle worker waits for NOTIFY before polling (POLL_INTERVAL_SECONDS). Default: 1.")
    var pollInterval: Double?
    @Option(help: "Minutes the API layer has to answer a refund request before the product's refund_preference does (CONSUMPTION_ANSWER_AFTER_MINUTES). Default: 60.")
    var consumptionAnswerAfterMinutes: Int?

    func workerConfiguration(_ settings: Settings) throws -> WorkerConfiguration {
        let rules = RulesConfiguration(
            bundleIds: Set(try settings.requiredBundleIds(bundleIds)),
            sandboxPolicy: try settings.sandboxPolicy(sandboxPolicy, allowedUsers: sandboxAllowedUsers),
            familySharing: try settings.familySharing(familySharing)
        )
        let retry = RetryPolicy(
            baseSeconds: try settings.number("RETRY_BASE_SECONDS", flag: retryBase, default: 30),
            maxSeconds: try settings.number("RETRY_MAX_SECONDS", flag: retryMax, default: 3600),
            maxAttempts: try settings.integer("MAX_ATTEMPTS", flag: maxAttempts, default: 80, minimum: 1)
        )
        let notificationThreads = try settings.integer(
            "NOTIFICATION_THREADS", flag: nil, default: max(1, ProcessInfo.processInfo.activeProcessorCount), minimum: 1
        )
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        var configuration = WorkerConfiguration(
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
        configuration.notificationThreads = notificationThreads
        configuration.writeConnections = try settings.integer("WRITE_CONNECTIONS", flag: nil, default: 2, minimum: 1)
        configuration.subscriptionsRefreshMinutes = try settings.number(
            "SUBSCRIPTIONS_REFRESH_MINUTES", flag: nil, default: 60
        )
        configuration.consumptionAnswerAfterMinutes = try settings.integer(
            "CONSUMPTION_ANSWER_AFTER_MINUTES", flag: consumptionAnswerAfterMinutes, default: 60
        )
        return configuration
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
            throw ConfigurationError(error.code == .emptySharedSecret ? .missing : .invalid, error.description)
        }
        return configuration
    }
}
