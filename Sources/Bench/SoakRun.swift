import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ThreadSupport
import Workers

/// `bench --soak MINUTES`: hours of steady load on one worker in this process. Receipts arrive `rate` a second (an
/// enqueuer thread, a statement every 50 ms) and signed notifications a tenth of that (DID_RENEW and ONE_TIME_CHARGE
/// in turn, through `receive_notification()`), while the fake App Store answers with latency, jitter and faults
/// (HTML 503 pages, 21005, hangs the client gives up on). Each interval (a minute) gives one line: the worker's
/// resident set, CPU per job of this process and of PostgreSQL, enqueue → verdict p50/p99, notifications final
/// and arrival → applied p99, retries and dead letters. After MINUTES the arrivals stop, everything is let finish,
/// and the database is checked for exactly-once (`SoakChecks`); each series is judged flat or not
/// (`SoakFlatness`).
public struct SoakRun {
    /// Faults when none are asked for: 1% HTML 503 pages (a 5xx from Apple's edge), 0.5% status 21005 (receipt
    /// server unavailable), 0.5% hangs (the client's timeout ends them).
    public static let defaultFaults = FaultRates(status21005: 0.005, html503: 0.01, hang: 0.005)

    public let configuration: BenchConfiguration
    /// The fake App Store's random faults.
    public var faults = SoakRun.defaultFaults
    /// Seconds per line (a minute; shorter in tests).
    public var intervalSeconds: Double = 60
    let logger: Logger
    let progress: (String) -> Void

    public init(configuration: BenchConfiguration, logLevel: Logger.Level, progress: @escaping (String) -> Void) {
        self.configuration = configuration
        var logger = Logger(label: "receipt-worker.bench")
        logger.logLevel = logLevel
        self.logger = logger
        self.progress = progress
    }

    /// Problems with the soak's own numbers, each phrased with its fix.
    public static func problems(minutes: Double, rate: Double, intervalSeconds: Double) -> [String] {
        var problems: [String] = []
        if !(minutes > 0 && minutes <= 7 * 24 * 60) {
            problems.append("--soak must be minutes above 0, at most a week")
        }
        if !(rate > 0 && rate <= 100_000) {
            problems.append("--rate must be receipts per second, above 0, at most 100000")
        }
        if !(intervalSeconds >= 1 && intervalSeconds <= 3_600) {
            problems.append("--soak-interval must be 1…3600 seconds")
        }
        return problems
    }

    public func run(minutes: Double, rate: Double) throws -> SoakReport {
        let problems = configuration.problems()
            + Self.problems(minutes: minutes, rate: rate, intervalSeconds: intervalSeconds)
        guard problems.isEmpty else { throw BenchError(problems.joined(separator: "; ")) }
        guard configuration.fakeAppStoreCommand == nil, !configuration.signedTransactions else {
            throw BenchError("--soak runs receipts against the fake App Store in this process: leave out "
                + "--fake-process and --signed-transactions")
        }
        let bench = BenchRun(configuration: configuration, logLevel: logger.logLevel, progress: progress)
        try bench.checkFileLimit()

        let environment = BenchEnvironment()
        defer { environment.tearDown() }
        progress("starting PostgreSQL, migrating, starting the fake App Store")
        let admin = try environment.startNotificationDatabase(configuration, appAppleId: NotificationsRun.appAppleId)
        defer { admin.close() }
        let slowest = Double(configuration.appleLatencyMilliseconds + configuration.appleJitterMilliseconds) / 1000
        // Short enough that a hang costs the job a retry within seconds, as a production timeout would.
        let appleTimeout = slowest + 5
        let client = try environment.startAppStore(
            latencyMilliseconds: configuration.appleLatencyMilliseconds,
            jitterMilliseconds: configuration.appleJitterMilliseconds, threads: configuration.fakeAppStoreThreads,
            connections: configuration.maxInFlight, tls: configuration.tls, http1: configuration.http1,
            maxConnections: configuration.maxConnections, processCommand: nil, faults: faults,
            hangSeconds: Int(appleTimeout.rounded(.up)) + 5, timeoutSeconds: appleTimeout, logger: logger
        )
        let postmaster = try environment.postmasterPID
            ?? configuration.postgresPID.map { try bench.checkedPostmaster($0, admin: admin) }
        if configuration.prefill > 0 {
            progress("prefilling the tables with \(configuration.prefill) finished jobs and their history")
            _ = try Prefill.fill(admin, rows: configuration.prefill, progress: progress)
        }

        let tag = "s" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let notificationRate = rate / 10
        let signer = try JWSSigner(chain: SigningChain())
        let renewals = NotificationPayloads(signer: signer, tag: tag + "r", kind: .renewal)
        let charges = NotificationPayloads(signer: signer, tag: tag + "c", kind: .announcedPurchase)
        let perKind = Int((minutes * 60 * notificationRate / 2).rounded(.up)) + 1
        try Self.prepareNotifications(admin, renewals: renewals, charges: charges, count: perKind)
        let notificationsAfter = try admin.query("SELECT coalesce(max(id), 0) AS id FROM receipt_notifications")
            .int64(0, "id") ?? 0

        let recorder = SoakRecorder()
        let worker = Worker(
            configuration: bench.makeWorkerConfiguration(tag: tag), databaseURL: environment.databaseURL,
            client: client,
            signedData: SignedDataVerifier(
                configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: false)
            ),
            logger: logger, events: recorder.events
        )
        progress(String(
            format: "soaking for %.2f min: %.0f receipts/s, %.1f notifications/s; a line per %.0f s", minutes, rate,
            notificationRate, intervalSeconds
        ))
        progress(SoakMinute.header)
        let running = try WorkerThread(worker)
        defer { running.stop() }
        let start = ContinuousClock.now
        let enqueuer = try SoakEnqueuer(
            databaseURL: environment.databaseURL, tag: tag, rate: rate, from: start, recorder: recorder
        )
        defer { enqueuer.stop() }
        let notifications = SoakNotifications(
            databaseURL: environment.databaseURL, renewals: renewals, charges: charges
        )
        try notifications.start(rate: notificationRate, from: start)
        defer { _ = notifications.stop(waitingUntil: .now) }

        let series = try measure(
            minutes: minutes, from: start, recorder: recorder, notifications: notifications, enqueuer: enqueuer,
            running: running, postmaster: postmaster
        )

        progress("arrivals stopped; waiting until every job and notification is final")
        let drainStart = ContinuousClock.now
        let deadline = drainStart + .seconds(configuration.timeoutSeconds)
        let notificationsDone = notifications.stop(waitingUntil: deadline)
        let jobsDone = recorder.waitUntilAllFinal(until: deadline)
        let drainSeconds = (ContinuousClock.now - drainStart).seconds
        running.stop()
        if let error = running.error { throw error }
        guard jobsDone, notificationsDone else {
            throw BenchError(
                "\(recorder.openCount) jobs and \(notifications.openCount) notifications were not final "
                    + "\(Int(configuration.timeoutSeconds)) s after the arrivals stopped (--timeout)"
            )
        }
        let checks = try SoakChecks.read(
            admin, tag: tag, notificationsAfter: notificationsAfter,
            purchasePrefixes: [renewals.originalTransactionId(0), charges.originalTransactionId(0)].map {
                String($0.dropLast(1))
            }
        )
        return SoakReport(
            minutesAsked: minutes, intervalSeconds: intervalSeconds, rate: rate, notificationRate: notificationRate,
            appleLatencyMs: configuration.appleLatencyMilliseconds,
            appleJitterMs: configuration.appleJitterMilliseconds,
            appleTimeoutSeconds: appleTimeout, faults: Self.named(faults), maxInFlight: configuration.maxInFlight,
            database: environment.databaseDescription, cores: ProcessInfo.processInfo.activeProcessorCount,
            minutes: series, drainSeconds: drainSeconds, checks: checks, flatness: SoakFlatness.judge(series)
        )
    }

    /// The intervals, each read as it ends and printed through `progress`.
    private func measure(
        minutes: Double, from start: ContinuousClock.Instant, recorder: SoakRecorder,
        notifications: SoakNotifications, enqueuer: SoakEnqueuer, running: WorkerThread, postmaster: Int32?
    ) throws -> [SoakMinute] {
        let total = minutes * 60
        let count = Int((total / intervalSeconds).rounded(.up))
        var series: [SoakMinute] = []
        var cpu = ProcessResources.cpuSeconds()
        var postgres = postmaster.flatMap { ProcessTreeCPU.seconds(root: $0) }
        var begun = start
        for index in 1...count {
            let end = start + .seconds(min(Double(index) * intervalSeconds, total))
            while ContinuousClock.now < end {
                if let error = enqueuer.error ?? notifications.error { throw BenchError(error) }
                if running.wait(seconds: 0) {
                    if let error = running.error { throw error }
                    throw BenchError("the worker stopped during the soak")
                }
                Thread.sleep(forTimeInterval: min(0.5, max(0, (end - ContinuousClock.now).seconds)))
            }
            if index == count {
                // The last interval ends the arrivals: its figures hold every receipt and notification sent.
                enqueuer.stop()
                notifications.stopSending()
            }
            let jobs = recorder.takeInterval()
            let notes = notifications.takeInterval()
            let cpuNow = ProcessResources.cpuSeconds()
            let postgresNow = postmaster.flatMap { ProcessTreeCPU.seconds(root: $0) }
            let items = jobs.finished + notes.final
            let verdicts = jobs.latencies.isEmpty ? nil : LatencySummary(microseconds: jobs.latencies)
            let applied = notes.latencies.isEmpty ? nil : LatencySummary(microseconds: notes.latencies)
            let minute = SoakMinute(
                index: index, seconds: (ContinuousClock.now - begun).seconds, enqueued: jobs.enqueued,
                finished: jobs.finished, retries: jobs.retries, dead: jobs.dead,
                rssMebibytes: Double(ProcessResources.residentBytes() ?? 0) / 1_048_576,
                workerCPUMicrosecondsPerJob: SoakMinute.perItem(cpuNow - cpu, items: items),
                postgresCPUMicrosecondsPerJob: SoakMinute.perItem(
                    postgresNow.flatMap { now in postgres.map { now - $0 } }, items: items
                ),
                enqueueToVerdictP50Milliseconds: verdicts?.p50Milliseconds,
                enqueueToVerdictP99Milliseconds: verdicts?.p99Milliseconds,
                notificationsSent: notes.sent, notificationsFinal: notes.final, notificationsApplied: notes.applied,
                arrivalToAppliedP99Milliseconds: applied?.p99Milliseconds
            )
            series.append(minute)
            progress(minute.line)
            (cpu, postgres, begun) = (cpuNow, postgresNow, ContinuousClock.now)
        }
        return series
    }

    /// Each renewal's chain has an owner and each charge's token a customer, so every notification applied credits
    /// one purchase.
    private static func prepareNotifications(
        _ admin: PostgresConnection, renewals: NotificationPayloads, charges: NotificationPayloads, count: Int
    ) throws {
        _ = try admin.query(
            """
            INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
            SELECT 'Production', o, 'user-' || o FROM unnest($1::text[]) AS o
            """,
            [BenchEnqueuer.arrayLiteral((0..<count).map(renewals.originalTransactionId))]
        )
        _ = try admin.query(
            """
            INSERT INTO receipt_account_tokens (app_account_token, user_id)
            SELECT t::uuid, 'user-' || $2 || '-' || n FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n)
            """,
            [BenchEnqueuer.arrayLiteral((0..<count).map(charges.accountToken)), charges.tag]
        )
    }

    /// The fault rates by name, for the report.
    static func named(_ rates: FaultRates) -> [String: Double] {
        [
            "21005": rates.status21005, "21009": rates.status21009, "21199": rates.status21199Retryable,
            "html-503": rates.html503, "truncated": rates.truncatedJSON, "reset": rates.connectionReset,
            "hang": rates.hang, "21004": rates.wrongSecret21004,
        ]
    }
}
