import AppStoreClient
import AppStoreSignedData
import ConsoleOutput
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport
import Workers

/// `receipt-worker demo`: a temporary PostgreSQL (or DATABASE_URL), the fake App Store and a worker, run on sample
/// orders step by step: start, two phases of orders, tables, and (with `keep`) waiting for a signal. Each step checks
/// `stopRequested` (SIGINT/SIGTERM) first; whatever happens, what was started is stopped again before `run()` returns.
public struct DemoRun {
    let options: DemoOptions
    let environment: DemoEnvironment
    /// Set on SIGINT/SIGTERM.
    let stopRequested: ConditionLock<Bool>
    private let logger: Logger

    /// Fast retries, so the order that Apple fails three times is verified within seconds.
    static let retry = RetryPolicy(baseSeconds: 0.2, maxSeconds: 1, maxAttempts: 10)
    static let apps = [DemoScenarios.app]

    /// - Parameter connect: opens a database connection, turning a failure into the error to show.
    public init(
        options: DemoOptions,
        stopRequested: ConditionLock<Bool>,
        connect: @escaping (String) throws -> PostgresConnection
    ) {
        self.options = options
        self.environment = DemoEnvironment(connect: connect)
        self.stopRequested = stopRequested
        var logger = Logger(label: "receipt-worker.demo")
        logger.logLevel = .warning
        self.logger = logger
    }

    /// Runs the demo, then stops what it started and says so.
    public func run() throws {
        let outcome = Result { try steps(externalURL: options.databaseURL) }
        let stopped = environment.tearDown()
        if !stopped.isEmpty { print("Cleaned up: \(stopped.joined(separator: "; ")).") }
        try outcome.get()
    }

    private func steps(externalURL: String?) throws {
        // Order ids must be new in a database that outlives the run.
        let tag = externalURL == nil ? "" : String(String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(4)) + "-"
        // StoreKit 2 transactions are signed by a chain made for this run, whose root the worker trusts (offline, at
        // each transaction's signedDate: nothing here reaches an OCSP responder).
        let signer = try JWSSigner(chain: SigningChain())
        let signedData = SignedDataVerifier(
            configuration: .init(rootCertificates: [signer.chain.root], onlineChecks: false)
        )
        let orders = try DemoScenarios.orders(tag: tag, signer: signer)
        // Phase 4's subscription and phase 5's lost order are two orders more.
        print("receipt-worker demo: \(orders.count + 2) sample orders, verified end to end.\n")

        print("Starting")
        let (fake, client, connection) = try start(externalURL: externalURL, tag: tag)
        let store = JobStore(connection: connection)

        let started = Date()
        var progress = DemoProgress()
        let first = orders.filter { $0.phase == 1 }
        let replays = orders.filter { $0.phase == 2 }
        let retries = String(
            format: "retries after %g s, at most %g s apart", Self.retry.baseSeconds, Self.retry.maxSeconds
        )
        print("\nPhase 1: \(first.count) orders enqueued; a worker verifies them (\(retries))")
        var jobs = try enqueue(first, store)
        try drain(
            jobs.map(\.id), client: client, signedData: signedData, connection: connection, progress: &progress
        )
        print(
            "Phase 2: \(replays.count) more, enqueued now that phase 1 is final "
                + "(a replay must find its original credited)"
        )
        jobs += try enqueue(replays, store)
        try drain(
            jobs.map(\.id), client: client, signedData: signedData, connection: connection, progress: &progress
        )

        print("Phase 3: Apple asks whether to refund a StoreKit 2 purchase (CONSUMPTION_REQUEST); a worker answers")
        guard let refunded = jobs.first(where: { $0.order.signed && $0.order.expected.state == "verified" }) else {
            throw DemoError(.unexpectedVerdicts, "no StoreKit 2 purchase was credited to ask a refund about")
        }
        let refund = Self.refundReport(
            try answerRefundRequest(
                for: refunded, signer: signer, fake: fake, client: client, signedData: signedData,
                connection: connection
            )
        )
        try checkStop()

        print("Phase 4: a subscriber's renewal charge fails (DID_FAIL_TO_RENEW, GRACE_PERIOD); still served in grace")
        let subscriber = try graceSubscriber(
            tag: tag, signer: signer, client: client, signedData: signedData, connection: connection,
            store: store, progress: &progress
        )
        let grace = Self.graceReport(subscriber)
        jobs.append(subscriber.job)
        try checkStop()

        print("Phase 5: a customer pays and the app dies before sending anything; Apple's notification completes the order")
        let lost = try lostOrder(
            tag: tag, signer: signer, client: client, signedData: signedData, connection: connection,
            progress: &progress
        )
        let lostReport = Self.lostOrderReport(lost)
        jobs.append(lost.job)
        let elapsed = Date().timeIntervalSince(started)
        try checkStop()

        let report = DemoReport(connection: connection, jobs: jobs)
        let tables: [String] = [try report.verdicts(), try report.ledger(), refund.text, grace.text, lostReport.text]
        print("\n" + tables.joined(separator: "\n\n") + "\n")
        let mismatches = try report.unexpected()
        print(try report.totals(elapsedSeconds: elapsed, stats: fake.stats(), unexpected: mismatches.count))
        for mismatch in mismatches { print("  unexpected: \(mismatch)") }
        flushStandardOutput()
        guard mismatches.isEmpty else {
            throw DemoError(.unexpectedVerdicts, "\(mismatches.count) orders did not get the verdict the demo expects")
        }
        guard refund.expected else {
            throw DemoError(.unexpectedVerdicts, "the refund request was not answered as the demo expects")
        }
        guard grace.expected else {
            throw DemoError(.unexpectedVerdicts, "the subscriber is not served through the grace period as expected")
        }
        guard lostReport.expected else {
            throw DemoError(.unexpectedVerdicts, "the lost order was not completed by Apple's notification as expected")
        }
        if options.keep { keepRunning(externalURL: externalURL, fakeBaseURL: fake.baseURL) }
    }

    /// PostgreSQL, the fake App Store and the schema, each reported on one line.
    private func start(
        externalURL: String?, tag: String
    ) throws -> (FakeAppStoreServer, AppStoreClient, PostgresConnection) {
        try environment.startPostgres(externalURL: externalURL)
        if let cluster = environment.cluster {
            item("PostgreSQL", "temporary cluster on 127.0.0.1:\(cluster.port), data in \(cluster.dataDirectory)")
        } else {
            item("PostgreSQL", "DATABASE_URL (this run's orders are named order-\(tag)NN)")
        }
        try checkStop()

        // The database first: a wrong DATABASE_URL ends the demo before anything else starts.
        let connection = try environment.connect()
        let migrator = try Migrator(
            directory: try Migrator.locateDirectory(explicit: options.sqlDirectory, environment: options.environment)
        )
        let applied = try migrator.migrate(connection)
        try JobStore(connection: connection).registerApps(Self.apps)
        item("schema", migrator.summary(ofApplied: applied) + ", app \(Self.apps.joined(separator: ", ")) registered")
        try checkStop()

        let (fake, client) = try environment.startFakeAppStore(
            latencyMs: options.appleLatencyMs, jitterMs: options.appleJitterMs, logger: logger
        )
        let upper = options.appleLatencyMs + options.appleJitterMs
        let latency = upper == options.appleLatencyMs ? "\(upper)" : "\(options.appleLatencyMs)–\(upper)"
        item("fake App Store", "\(fake.productionURL), answers in \(latency) ms")
        try checkStop()
        return (fake, client, connection)
    }

    private func enqueue(_ orders: [DemoOrder], _ store: JobStore) throws -> [(order: DemoOrder, id: Int64)] {
        try orders.map { order in
            guard order.signed else {
                let id = try store.enqueue(
                    receiptData: order.receipt, orderId: order.orderId, userId: order.userId,
                    productId: order.productId, transactionId: order.transactionId, bundleId: order.bundleId
                )
                return (order, id)
            }
            let id = try store.enqueueTransaction(
                signedTransaction: order.receipt, transactionId: order.transactionId, orderId: order.orderId,
                userId: order.userId, productId: order.productId, bundleId: order.bundleId
            )
            return (order, id)
        }
    }

    /// Runs a worker in drain mode until every job in `ids` is final, showing progress. On a signal, a timeout or
    /// an error, the worker is stopped before this returns.
    func drain(
        _ ids: [Int64], client: AppStoreClient, signedData: SignedDataVerifier, connection: PostgresConnection,
        progress: inout DemoProgress
    ) throws {
        let worker = Worker(
            configuration: workerConfiguration(), databaseURL: environment.databaseURL, client: client,
            signedData: signedData, logger: logger
        )
        let thread = try WorkerThread(worker)
        let grace = worker.configuration.shutdownGraceSeconds + 10
        defer { thread.stop(waitingUpTo: grace) }
        let deadline = Date(timeIntervalSinceNow: options.timeoutSeconds)
        var timedOut = false
        while !thread.wait(seconds: 0.1) && !stopped {
            progress.show(try DemoReport.stateCounts(ids, connection: connection))
            timedOut = Date() > deadline
            if timedOut { break }
        }
        thread.stop(waitingUpTo: grace)
        progress.show(try DemoReport.stateCounts(ids, connection: connection))
        progress.finish()
        try checkStop()
        if let error = thread.error { throw DemoError(.worker, "the worker stopped: \(error)") }
        if timedOut {
            throw DemoError(
                .timedOut,
                "the jobs were not all final after \(Int(options.timeoutSeconds)) s (see table receipt_jobs_stuck)"
            )
        }
    }

    /// The shared secret matches the fake's (DemoEnvironment); the sandbox policy is the default, accept.
    private func workerConfiguration() -> WorkerConfiguration {
        WorkerConfiguration(
            workerId: "demo-\(getpid())",
            maxInFlight: 64,
            leaseSeconds: 10,
            pollIntervalSeconds: 0.05,
            retry: Self.retry,
            rules: RulesConfiguration(bundleIds: Set(Self.apps)),
            schedulerIntervalSeconds: 0.1,
            drain: true,
            shutdownGraceSeconds: 2
        )
    }

    /// Prints how to look around, then waits for SIGINT/SIGTERM.
    private func keepRunning(externalURL: String?, fakeBaseURL: String) {
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
                APPLE_BUNDLE_IDS=\(Self.apps.joined(separator: ",")) \\
                APPLE_PRODUCTION_URL=\(fakeBaseURL)/verifyReceipt \\
                APPLE_SANDBOX_URL=\(fakeBaseURL)/sandbox/verifyReceipt \\
                \(executable) work
            """
        )
        flushStandardOutput()
        stopRequested.wait(until: { $0 })
    }

    private var stopped: Bool { stopRequested.withLock { $0 } }

    private func checkStop() throws {
        if stopped { throw DemoError(.interrupted, "interrupted") }
    }

    private func item(_ name: String, _ value: String) {
        print("  " + name.padding(toLength: 16, withPad: " ", startingAt: 0) + value)
    }
}
