import AppStoreSignedData
import CurlHTTP
import FakeAppStore
import Foundation
import Logging
import NotificationReceiver
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport
import Workers

/// `bench --notifications N [--rate R] [--via sql|http] [--notification-type DID_RENEW|TEST|ONE_TIME_CHARGE]`: how
/// fast one worker applies signed notifications, and how long each waits from its arrival to its application. N
/// DID_RENEWs (or TESTs, or ONE_TIME_CHARGEs of purchases no job names, each credited as an order of its own to its
/// registered token's customer) signed by the fake App Store's chain
/// (`NotificationPayloads`) are stored through `receive_notification()` (`--via sql`, one connection) or posted to
/// the notification receiver (`--via http`, `receipt-worker notifications` in this process, HTTP/1.1 over up to 8
/// connections). Without `--rate` they are all stored first, then the worker starts: applied per second is N over
/// the worker's start → the last one applied. With `--rate R` the worker runs from the start and the notifications
/// arrive R a second, one at a time. Arrival: the store was acknowledged (`receive_notification()` returned, or the
/// receiver answered 200, both after the commit); applied: first seen applied by a reader polling every 5 ms (without
/// `--rate`, the last one seen final by a reader polling every 50 ms).
public struct NotificationsRun {
    public enum Path: String, Sendable, Codable, CaseIterable {
        case sql
        case http
    }

    public let configuration: BenchConfiguration
    let logger: Logger
    let progress: (String) -> Void

    static let appAppleId: Int64 = 1_234_567_890

    public init(configuration: BenchConfiguration, logLevel: Logger.Level, progress: @escaping (String) -> Void) {
        self.configuration = configuration
        var logger = Logger(label: "receipt-worker.bench")
        logger.logLevel = logLevel
        self.logger = logger
        self.progress = progress
    }

    public func run(count: Int, rate: Double?, via path: Path, type: String = "DID_RENEW") throws -> NotificationsReport {
        guard let kind = NotificationPayloads.Kind(rawValue: type) else {
            throw BenchError("--notification-type must be DID_RENEW, TEST or ONE_TIME_CHARGE, not \(type)")
        }
        let environment = BenchEnvironment()
        defer { environment.tearDown() }
        progress("starting PostgreSQL, migrating")
        let admin = try environment.startNotificationDatabase(configuration, appAppleId: Self.appAppleId)
        defer { admin.close() }
        let signer = try JWSSigner(chain: SigningChain())
        let payloads = NotificationPayloads(
            signer: signer, tag: String(UInt32.random(in: 0...UInt32.max), radix: 36), kind: kind
        )
        progress("signing \(count) \(kind.rawValue) notifications")
        let signed = try payloads.signed(count: count)
        if kind == .announcedPurchase {
            // Each purchase's token is its customer's (as register_account_token() records it), and no job names it.
            _ = try admin.query(
                """
                INSERT INTO receipt_account_tokens (app_account_token, user_id)
                SELECT t::uuid, 'user-' || n FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n)
                """,
                [BenchEnqueuer.arrayLiteral((0..<count).map(payloads.accountToken))]
            )
        } else {
            // Each chain has an owner, so each renewal is credited.
            _ = try admin.query(
                """
                INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
                SELECT 'Production', o, 'user-' || o FROM unnest($1::text[]) AS o
                """,
                [BenchEnqueuer.arrayLiteral((0..<count).map(payloads.originalTransactionId))]
            )
        }

        var workerConfiguration = WorkerConfiguration(
            workerId: "bench-notifications", rules: RulesConfiguration(bundleIds: [BenchEnvironment.bundleId])
        )
        if let threads = configuration.notificationThreads { workerConfiguration.notificationThreads = threads }
        if let writers = configuration.writeConnections { workerConfiguration.writeConnections = writers }
        let worker = Worker(
            configuration: workerConfiguration, databaseURL: environment.databaseURL, client: nil,
            signedData: SignedDataVerifier(configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: false)),
            logger: logger
        )
        let receiver = try path == .http ? Self.startReceiver(environment.databaseURL, logger: logger) : nil
        defer { receiver?.stop() }
        let sender = try NotificationPoster(path: path, databaseURL: environment.databaseURL, port: receiver?.port)
        defer { sender.close() }

        let sampler = try AppliedSampler(
            databaseURL: environment.databaseURL, expected: count, perNotification: rate != nil
        )
        let postgres = environment.postmasterPID
        var intakeSeconds: Double?
        if rate == nil {
            progress("storing \(count) notifications through \(path == .sql ? "receive_notification()" : "the receiver")")
            let intakeStart = ContinuousClock.now
            try sender.storeAll(signed, batch: configuration.enqueueBatch)
            intakeSeconds = (ContinuousClock.now - intakeStart).seconds
        }
        let cpuBefore = ProcessResources.cpuSeconds()
        let postgresBefore = postgres.flatMap { ProcessTreeCPU.seconds(root: $0) }
        progress("starting the worker" + (rate.map { ", then sending \(Int($0)) a second" } ?? ""))
        let workerStart = ContinuousClock.now
        let running = try WorkerThread(worker)
        defer { _ = running.stop() }
        sampler.start()
        var arrivals: [Int: ContinuousClock.Instant] = [:]
        if let rate {
            arrivals = try sender.send(signed, rate: rate)
        }
        let deadline = workerStart + .seconds(configuration.timeoutSeconds)
        let finished = sampler.wait(forFinished: count, until: deadline)
        let lastApplied = sampler.lastSeen ?? ContinuousClock.now
        let cpuSeconds = ProcessResources.cpuSeconds() - cpuBefore
        let postgresCPU = postgres.flatMap { ProcessTreeCPU.seconds(root: $0) }.flatMap { after in
            postgresBefore.map { after - $0 }
        }
        sampler.stop()
        _ = running.stop()
        if let error = running.error { throw error }
        guard finished else {
            throw BenchError("only \(sampler.seenCount) of \(count) notifications were final after --timeout")
        }

        let states = try admin.query(
            """
            SELECT count(*) FILTER (WHERE state = 'applied') AS applied,
                   count(*) FILTER (WHERE attempts > 1) AS claimed_again,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - received_at) AS p50,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY finished_at - received_at) AS p99,
                   extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - received_at)) AS p50_s,
                   extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY finished_at - received_at)) AS p99_s
            FROM receipt_notifications
            """
        )
        let credited = try admin.query(
            "SELECT count(*) AS n FROM receipt_transactions WHERE product_id IN ($1, $2)",
            [NotificationPayloads.productId, NotificationPayloads.chargeProductId]
        ).int64(0, "n")
        let applied = Int(states.int64(0, "applied") ?? 0)
        let seen = sampler.firstSeen
        var latencies: [Int64] = []
        if rate != nil {
            let rows = try admin.query("SELECT id, payload_hash FROM receipt_notifications")
            var ids: [String: Int64] = [:]
            for index in rows.rows.indices {
                if let hash = rows[index, "payload_hash"], let id = rows.int64(index, "id") { ids[hash] = id }
            }
            for (index, arrived) in arrivals {
                guard let id = ids[NotificationPoster.hash(signed[index])], let appliedAt = seen[id] else { continue }
                latencies.append(Int64((appliedAt - arrived).seconds * 1_000_000))
            }
        }
        let drainSeconds = (lastApplied - workerStart).seconds
        return NotificationsReport(
            notifications: count, type: kind.rawValue, via: path, rate: rate,
            achievedRate: rate == nil ? nil : sender.achievedRate,
            notificationThreads: workerConfiguration.notificationThreads,
            writeConnections: workerConfiguration.writeConnections,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            database: environment.databaseDescription,
            intakeSeconds: intakeSeconds,
            intakePerSecond: intakeSeconds.map { Double(count) / max($0, 1e-9) },
            drainSeconds: drainSeconds,
            appliedPerSecond: Double(applied) / max(drainSeconds, 1e-9),
            applied: applied,
            credited: Int(credited ?? 0),
            claimedAgain: Int(states.int64(0, "claimed_again") ?? 0),
            arrivalToApplied: rate == nil ? nil : LatencySummary(microseconds: latencies),
            databaseP50Milliseconds: states[0, "p50_s"].flatMap(Double.init).map { $0 * 1000 },
            databaseP99Milliseconds: states[0, "p99_s"].flatMap(Double.init).map { $0 * 1000 },
            workerCPUMicrosecondsPerNotification: cpuSeconds / Double(max(count, 1)) * 1e6,
            postgresCPUMicrosecondsPerNotification: postgresCPU.map { $0 / Double(max(count, 1)) * 1e6 }
        )
    }

    private static func startReceiver(_ databaseURL: String, logger: Logger) throws -> NotificationReceiver {
        do {
            return try NotificationReceiver.start(
                NotificationReceiverConfiguration(host: "127.0.0.1", port: 0, databaseURL: databaseURL), logger: logger
            )
        } catch {
            throw BenchError("cannot start the notification receiver: \(error)")
        }
    }
}
