import AppStoreSignedData
import Foundation
import ReceiptRules

/// How a worker process runs. Filled from the environment and flags by the executable.
public struct WorkerConfiguration: Sendable {
    /// Names this process in `locked_by` (host, pid and a random suffix by default).
    public var workerId: String
    /// Apple requests in flight at once in this process (`MAX_IN_FLIGHT`). Claims never exceed it.
    public var maxInFlight: Int
    /// The most jobs taken in one claim statement.
    public var claimBatch: Int
    /// The most outcomes written in one statement.
    public var writeBatch: Int
    /// Lease length (`LEASE_SECONDS`); renewed every third of it while Apple calls are in flight.
    public var leaseSeconds: Double
    /// How long an idle worker waits for a NOTIFY before it polls anyway.
    public var pollIntervalSeconds: Double
    public var retry: RetryPolicy
    public var rules: RulesConfiguration
    public var breaker: CircuitBreaker.Configuration
    /// Run the scheduler in this process (it is safe to run it in every worker).
    public var runScheduler: Bool
    public var schedulerIntervalSeconds: Double
    /// Exit once every job is final (`work --drain`).
    public var drain: Bool
    /// On SIGTERM/SIGINT, wait this long for calls in flight before giving their jobs back to the queue.
    public var shutdownGraceSeconds: Double
    /// Receipts larger than this are rejected `malformed_input` (`enqueue_receipt` has the same limit).
    public var maxReceiptBytes: Int
    /// Retention, when set: old receipts cleared and delivered verdicts deleted by the maintenance loop.
    public var retention: Retention?
    /// Seconds between retention passes of the maintenance loop (the first comes after a minute, or this if shorter).
    public var retentionIntervalSeconds: Double = 300
    /// `SUBSCRIPTIONS_REFRESH_MINUTES`: with a Server API client, how often `work` asks Get All Subscription Statuses
    /// about the chains whose period ended with no renewal and no expiry seen (`SubscriptionRefresher`); 0: never.
    public var subscriptionsRefreshMinutes: Double = 60
    /// Connections writing verdicts back (`WRITE_CONNECTIONS`, 1-8; 2 by default): so many for jobs, and so many for
    /// notifications. The first of each is always there (the write connection; the maintenance connection). Each
    /// other one ("overflow writer") takes a batch only while a backlog waits for the first, so a database with
    /// cores to spare writes a burst's verdicts side by side; it connects on first use and closes after
    /// `overflowWriterIdleSeconds` without a batch. A quiet worker holds 3 connections, a busy one up to
    /// 3 + 2 × (WRITE_CONNECTIONS - 1).
    public var writeConnections = 2
    /// An overflow writer's connection closes after this many seconds without a batch (opened again when needed).
    public var overflowWriterIdleSeconds: Double = 30
    /// Threads verifying App Store Server Notifications at once (`NOTIFICATION_THREADS`; the CPU count by default),
    /// so a flood of forgeries, or a notification waiting on OCSP, does not hold up the others.
    public var notificationThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Where receipts are verified (`RECEIPT_SOURCE`): verifyReceipt, or the App Store Server API (when the worker
    /// has a client for it).
    public var receiptSource: ReceiptSource = .verifyReceipt
    /// With an App Store Server API client, a verified signed transaction is confirmed with Get Transaction Info, so
    /// a refund since the device signed it is seen (`APPSTORE_CONFIRM=always`); `never` decides on the device's copy.
    public var confirmSignedTransactions = true
    /// Checks an app receipt's PKCS#7 signature to Apple's root before `RECEIPT_SOURCE=api` trusts any id read from
    /// it (Apple Root CA pinned; tests add the root of the fake App Store's receipt chain).
    public var receiptSignature = ReceiptSignatureVerifier()
    /// `APPSTORE_REQUIRE_ACCOUNT_TOKEN`: a job given only a transaction id needs an `app_account_token` equal to the
    /// transaction's appAccountToken (a bare id proves only that the purchase exists for the app, not whose it is).
    public var requireAccountToken = false
    /// `CONSUMPTION_ANSWER_AFTER_MINUTES`: how long the API layer has to answer a refund request
    /// (answer_refund_request()) before the product's refund_preference answers it. With an App Store Server API
    /// client, the maintenance loop sends the answers due (RefundRequestSender).
    public var consumptionAnswerAfterMinutes = 60
    /// How often the maintenance loop looks for refund requests to answer (Apple gives 12 hours).
    public var refundRequestIntervalSeconds: Double = 15
    /// `RECONCILE_AT`: yesterday's Apple sales report compared with the ledger each day (`Reconciler`); nil: never.
    public var reconcile: ReconcileSchedule?

    /// How receipts are verified.
    public enum ReceiptSource: String, Sendable, Hashable {
        /// Apple's verifyReceipt (deprecated by Apple, still answering).
        case verifyReceipt = "verifyreceipt"
        /// A transaction id read from the receipt, then Get Transaction History v2, each entry verified.
        case serverAPI = "api"
    }

    public init(
        workerId: String,
        maxInFlight: Int = 512,
        claimBatch: Int = 200,
        writeBatch: Int = 500,
        leaseSeconds: Double = 60,
        pollIntervalSeconds: Double = 1,
        retry: RetryPolicy = RetryPolicy(),
        rules: RulesConfiguration,
        breaker: CircuitBreaker.Configuration = .init(),
        runScheduler: Bool = true,
        schedulerIntervalSeconds: Double = 1,
        drain: Bool = false,
        shutdownGraceSeconds: Double = 20,
        maxReceiptBytes: Int = 1 << 20,
        retention: Retention? = nil
    ) {
        self.workerId = workerId
        self.maxInFlight = maxInFlight
        self.claimBatch = claimBatch
        self.writeBatch = writeBatch
        self.leaseSeconds = leaseSeconds
        self.pollIntervalSeconds = pollIntervalSeconds
        self.retry = retry
        self.rules = rules
        self.breaker = breaker
        self.runScheduler = runScheduler
        self.schedulerIntervalSeconds = schedulerIntervalSeconds
        self.drain = drain
        self.shutdownGraceSeconds = shutdownGraceSeconds
        self.maxReceiptBytes = maxReceiptBytes
        self.retention = retention
    }

    /// The most connections `WRITE_CONNECTIONS` may ask for: past the database's cores they only contend.
    public static let maxWriteConnections = 8

    public func validate(appleTimeoutSeconds: Double) throws(WorkerConfigurationError) {
        try retry.validate()
        guard maxInFlight >= 1 else {
            throw WorkerConfigurationError(.outOfRange, setting: "MAX_IN_FLIGHT", "MAX_IN_FLIGHT must be at least 1")
        }
        guard (1...Self.maxWriteConnections).contains(writeConnections) else {
            throw WorkerConfigurationError(
                .outOfRange, setting: "WRITE_CONNECTIONS",
                "WRITE_CONNECTIONS must be 1-\(Self.maxWriteConnections), got \(writeConnections)"
            )
        }
        guard notificationThreads >= 1 else {
            throw WorkerConfigurationError(
                .outOfRange, setting: "NOTIFICATION_THREADS", "NOTIFICATION_THREADS must be at least 1"
            )
        }
        guard consumptionAnswerAfterMinutes >= 0, consumptionAnswerAfterMinutes <= 600 else {
            throw WorkerConfigurationError(
                .outOfRange, setting: "CONSUMPTION_ANSWER_AFTER_MINUTES",
                "CONSUMPTION_ANSWER_AFTER_MINUTES must be 0-600 (Apple wants the answer within 12 hours), got "
                    + "\(consumptionAnswerAfterMinutes)"
            )
        }
        guard leaseSeconds >= 2 else {
            throw WorkerConfigurationError(.outOfRange, setting: "LEASE_SECONDS", "LEASE_SECONDS must be at least 2")
        }
        guard !rules.bundleIds.isEmpty else {
            throw WorkerConfigurationError(
                .missing, setting: "APPLE_BUNDLE_IDS",
                "APPLE_BUNDLE_IDS is empty: set it to your app's bundle id(s), comma separated"
            )
        }
        _ = appleTimeoutSeconds
    }
}
