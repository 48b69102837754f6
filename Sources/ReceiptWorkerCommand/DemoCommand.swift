import ArgumentParser
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Workers

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline on sample receipts: PostgreSQL, a fake App Store, a worker, then a table of verdicts.",
        discussion: """
            Without DATABASE_URL the demo starts a temporary PostgreSQL cluster (needs initdb and pg_ctl: \
            apt-get install -y postgresql) and deletes it afterwards; with DATABASE_URL it migrates and uses that \
            database, and leaves the demo's jobs and ledger rows in it. The fake App Store runs in this process on \
            a free loopback port. Sample orders show every outcome: verified in production and in the sandbox, a \
            replayed receipt, a refund, a wrong product, another app's receipt, Apple failing three times, an \
            expired subscription and a receipt that is not base64. Everything started is stopped again at the end, \
            on an error, and on Ctrl-C.
            """
    )

    @Flag(help: "After the tables, keep PostgreSQL and the fake App Store running until Ctrl-C, to look around with psql.")
    var keep = false

    @Option(name: .customLong("apple-latency-ms"), help: "The fake App Store's delay before each answer.")
    var appleLatencyMs = 300

    @Option(name: .customLong("apple-jitter-ms"), help: "Random extra delay, 0…N ms, added to each answer.")
    var appleJitterMs = 200

    @Option(help: "Give up when the jobs are not all final after this many seconds.")
    var timeout: Double = 120

    @Option(help: "The directory of the SQL files (RECEIPT_WORKER_SQL_DIR). Default: found beside the binary.")
    var sqlDir: String?

    func validate() throws {
        guard appleLatencyMs >= 0, appleJitterMs >= 0 else {
            throw ValidationError("--apple-latency-ms and --apple-jitter-ms must not be negative")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let settings = Settings()
        // Warnings and errors only: the demo's own output is the point.
        try LogSetup.bootstrap(format: settings.string("LOG_FORMAT", flag: nil, default: "text"), level: "warning")
        let stop = StopFlag()
        let signals = SignalHandlers([SIGTERM, SIGINT]) { _ in
            if !stop.isSet { FileHandle.standardError.write(Data("\nstopping and cleaning up…\n".utf8)) }
            stop.set()
        }
        defer { signals.cancel() }

        let environment = DemoEnvironment()
        let externalURL = settings.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let outcome = Result {
            try DemoRun(command: self, settings: settings, environment: environment, stop: stop)
                .run(externalURL: externalURL)
        }
        let stopped = environment.tearDown()
        if !stopped.isEmpty { print("Cleaned up: \(stopped.joined(separator: "; ")).") }
        if stop.isSet, case .failure = outcome { throw ExitCode(130) }
        try outcome.get()
    }
}

/// One run of the demo, step by step. Each step checks `stop` (SIGINT/SIGTERM) before it starts.
struct DemoRun {
    let command: DemoCommand
    let settings: Settings
    let environment: DemoEnvironment
    let stop: StopFlag
    private let logger: Logger

    init(command: DemoCommand, settings: Settings, environment: DemoEnvironment, stop: StopFlag) {
        self.command = command
        self.settings = settings
        self.environment = environment
        self.stop = stop
        var logger = Logger(label: "receipt-worker.demo")
        logger.logLevel = .warning
        self.logger = logger
    }

    func run(externalURL: String?) throws {
        // Order ids are unique per run in a database that outlives it.
        let tag = externalURL == nil ? "" : String(String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(4)) + "-"
        let orders = DemoScenarios.orders(tag: tag)
        let apps = [DemoScenarios.app]
        print("receipt-worker demo: \(orders.count) sample orders, verified end to end.\n")

        print("Starting")
        try environment.startPostgres(externalURL: externalURL)
        if let cluster = environment.cluster {
            item("PostgreSQL", "temporary cluster on 127.0.0.1:\(cluster.port), data in \(cluster.dataDirectory)")
        } else {
            item("PostgreSQL", "DATABASE_URL (this run's orders are named order-\(tag)NN)")
        }
        try checkStop()
        try environment.startFakeAppStore(
            latencyMs: command.appleLatencyMs, jitterMs: command.appleJitterMs, logger: logger
        )
        let fake = environment.fake!
        let upper = command.appleLatencyMs + command.appleJitterMs
        let latency = upper == command.appleLatencyMs ? "\(upper)" : "\(command.appleLatencyMs)–\(upper)"
        item("fake App Store", "\(fake.productionURL), answers in \(latency) ms")

        let connection = try environment.connect()
        let migrator = try Migrator(
            directory: try Migrator.locateDirectory(explicit: command.sqlDir, environment: settings.environment)
        )
        let applied = try migrator.migrate(connection)
        let store = JobStore(connection: connection)
        try store.registerApps(apps)
        item(
            "schema",
            (applied.isEmpty ? "current (\(migrator.migrations.count) migrations)" : "\(applied.count) migrations applied")
                + ", app \(apps.joined(separator: ", ")) registered"
        )
        try checkStop()

        let started = Date()
        var jobs: [(order: DemoOrder, id: Int64)] = []
        var progress = DemoProgress()
        let first = orders.filter { $0.phase == 1 }
        let replays = orders.filter { $0.phase == 2 }
        print("\nPhase 1: \(first.count) orders enqueued; a worker verifies them (retries after 0.2 s, at most 1 s apart)")
        jobs += try enqueue(first, store)
        try drain(jobs.map(\.id), connection: connection, progress: &progress)
        try checkStop()
        print("Phase 2: \(replays.count) more, enqueued now that phase 1 is final (a replay must find its original credited)")
        jobs += try enqueue(replays, store)
        try drain(jobs.map(\.id), connection: connection, progress: &progress)
        let elapsed = Date().timeIntervalSince(started)

        let report = DemoReport(connection: connection, jobs: jobs)
        print("")
        print(try report.verdicts())
        print("")
        print(try report.ledger())
        print("")
        let mismatches = try report.unexpected()
        print(try report.totals(elapsedSeconds: elapsed, stats: fake.stats(), unexpected: mismatches.count))
        for mismatch in mismatches { print("  unexpected: \(mismatch)") }
        flushStandardOutput()
        guard mismatches.isEmpty else {
            throw CommandFailure("\(mismatches.count) orders did not get the verdict the demo expects")
        }
        if command.keep { try keepRunning(externalURL: externalURL, fakeBaseURL: fake.baseURL, apps: apps) }
    }

    private func enqueue(_ orders: [DemoOrder], _ store: JobStore) throws -> [(order: DemoOrder, id: Int64)] {
        try orders.map { order in
            let id = try store.enqueue(
                receiptData: order.receipt, orderId: order.orderId, userId: order.userId, productId: order.productId,
                transactionId: order.transactionId, bundleId: order.bundleId
            )
            return (order, id)
        }
    }

    /// Runs a worker in drain mode until every job is final, showing progress; stops it on a signal or timeout.
    private func drain(_ ids: [Int64], connection: PostgresConnection, progress: inout DemoProgress) throws {
        let worker = Worker(
            configuration: workerConfiguration(), databaseURL: environment.databaseURL, client: environment.client!,
            logger: logger
        )
        let thread = DemoWorkerThread(worker)
        let deadline = Date(timeIntervalSinceNow: command.timeout)
        var timedOut = false
        while !thread.wait(seconds: 0.1) {
            progress.show(try DemoReport.stateCounts(ids, connection: connection))
            if stop.isSet || Date() > deadline {
                timedOut = !stop.isSet
                worker.shutdown()
                _ = thread.wait(seconds: worker.configuration.shutdownGraceSeconds + 10)
                break
            }
        }
        progress.show(try DemoReport.stateCounts(ids, connection: connection))
        progress.finish()
        if let error = thread.error { throw CommandFailure("the worker stopped: \(error)") }
        if timedOut {
            throw CommandFailure(
                "the jobs were not all final after \(Int(command.timeout)) s (see table receipt_jobs_stuck)"
            )
        }
        try checkStop()
    }

    /// Fast retries so the flaky-Apple order finishes in seconds; the shared secret matches the fake's.
    private func workerConfiguration() -> WorkerConfiguration {
        WorkerConfiguration(
            workerId: "demo-\(getpid())",
            maxInFlight: 64,
            leaseSeconds: 10,
            pollIntervalSeconds: 0.05,
            retry: RetryPolicy(baseSeconds: 0.2, maxSeconds: 1, maxAttempts: 10),
            rules: RulesConfiguration(bundleIds: [DemoScenarios.app]),
            schedulerIntervalSeconds: 0.1,
            drain: true,
            shutdownGraceSeconds: 2
        )
    }

    private func keepRunning(externalURL: String?, fakeBaseURL: String, apps: [String]) throws {
        let url = externalURL == nil ? "\"\(environment.databaseURL)\"" : "\"$DATABASE_URL\""
        let executable = CommandLine.arguments.first ?? "receipt-worker"
        print(
            """

            PostgreSQL and the fake App Store keep running; press Ctrl-C to stop them and clean up.
            Look around:
              psql \(url)
                table receipt_queue_summary;
                table receipt_jobs_stuck;
                table receipt_failures;
                select id, order_id, state, reason, result from receipt_jobs order by id;
              DATABASE_URL=\(url) \(executable) status
              curl \(fakeBaseURL)/stats
            Run a worker against them (after `\(executable) enqueue …`):
              DATABASE_URL=\(url) APPLE_SHARED_SECRET=\(DemoEnvironment.sharedSecret) \\
                APPLE_BUNDLE_IDS=\(apps.joined(separator: ",")) \\
                APPLE_PRODUCTION_URL=\(fakeBaseURL)/verifyReceipt \\
                APPLE_SANDBOX_URL=\(fakeBaseURL)/sandbox/verifyReceipt \\
                \(executable) work
            """
        )
        flushStandardOutput()
        while !stop.isSet { stop.wait(seconds: 3600) }
    }

    private func checkStop() throws {
        if stop.isSet { throw CommandFailure("interrupted") }
    }

    private func item(_ name: String, _ value: String) {
        print("  " + name.padding(toLength: 16, withPad: " ", startingAt: 0) + value)
    }
}
