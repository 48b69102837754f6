import AppStoreClient
import AppStoreSignedData
import Crypto
import CurlHTTP
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport
import Workers

/// One benchmark run: start what is needed, enqueue the receipts, let one in-process worker verify them all,
/// measure idle pickup, read the figures back from the database, and stop everything again.
public struct BenchRun {
    public let configuration: BenchConfiguration
    let logger: Logger
    let progress: (String) -> Void

    public init(configuration: BenchConfiguration, logLevel: Logger.Level, progress: @escaping (String) -> Void) {
        self.configuration = configuration
        var logger = Logger(label: "receipt-worker.bench")
        logger.logLevel = logLevel
        self.logger = logger
        self.progress = progress
    }

    public func run() throws -> BenchReport {
        let problems = configuration.problems()
        guard problems.isEmpty else { throw BenchError(problems.joined(separator: "; ")) }
        try checkFileLimit()

        let environment = BenchEnvironment()
        let apiKey = configuration.confirm ? P256.Signing.PrivateKey() : nil
        defer { environment.tearDown() }
        progress("starting PostgreSQL, migrating, starting the fake App Store")
        try environment.startDatabase(
            configuration.database, fsync: configuration.fsync, sqlDirectory: configuration.sqlDirectory,
            settings: configuration.postgresSettings
        )
        let client = try environment.startAppStore(
            latencyMilliseconds: configuration.appleLatencyMilliseconds,
            jitterMilliseconds: configuration.appleJitterMilliseconds,
            threads: configuration.fakeAppStoreThreads,
            connections: configuration.maxInFlight,
            tls: configuration.tls,
            http1: configuration.http1,
            maxConnections: configuration.maxConnections,
            processCommand: configuration.fakeAppStoreCommand,
            apiKey: apiKey?.publicKey,
            logger: logger
        )
        let admin = try BenchConnection.open(environment.databaseURL)
        defer { admin.close() }
        let postmaster = try environment.postmasterPID ?? configuration.postgresPID.map { try checkedPostmaster($0, admin: admin) }

        var prefillSeconds = 0.0
        if configuration.prefill > 0 {
            progress("prefilling the tables with \(configuration.prefill) finished jobs and their history")
            prefillSeconds = try Prefill.fill(admin, rows: configuration.prefill, progress: progress)
        }
        // Order ids must be new in a database that outlives the run.
        let tag = "b" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let signer = configuration.signedTransactions ? try JWSSigner(chain: SigningChain()) : nil
        let (ids, inputBytes, enqueueStart) = try makeAndEnqueue(
            tag: tag, signer: signer, fake: environment.fake, admin: admin
        )
        let enqueueSeconds = (ContinuousClock.now - enqueueStart).seconds
        progress(String(format: "enqueued %d in %.2f s; starting the worker", ids.count, enqueueSeconds))

        let recorder = VerdictRecorder()
        recorder.expect(bulk: ids)
        let workerConfiguration = makeWorkerConfiguration(tag: tag)
        // The bench's own root, offline (no OCSP responder here): the chain is validated once, then cached.
        // With --confirm, the fake App Store's root: it signed the purchases and signs its answers.
        let root = configuration.confirm ? environment.fake?.signingChain.root : signer?.chain.root
        let signedData = root.map {
            SignedDataVerifier(configuration: .init(rootCertificates: [$0], onlineChecks: false))
        }
        let serverAPI = try apiKey.map { try environment.serverAPIClient(privateKey: $0) }
        let worker = Worker(
            configuration: workerConfiguration, databaseURL: environment.databaseURL, client: client,
            signedData: signedData, serverAPI: serverAPI, logger: logger, events: recorder.events
        )
        let sampler = try ConnectionSampler(url: environment.databaseURL, interval: 0.25)
        // What the fake App Store sees of the drain alone (its arrivals and late answers in the report).
        environment.resetFakeStats()
        // The benchmark's receipts were freed after the enqueue; malloc keeps such memory for reuse, which would hide
        // that much of the worker's growth. Given back first, the resident set below is what the worker starts from.
        CurlGlobal.releaseIdleMemory(keepingBuffers: .max, heap: true)
        let residentAtWorkerStart = ProcessResources.residentBytes() ?? 0
        let fakePID = environment.fakeProcess?.processIdentifier
        let timelineStart = ContinuousClock.now
        let cpuTimeline = try CPUTimelineSampler(start: timelineStart, interval: 0.1) {
            CPUReading(
                worker: ProcessResources.cpuSeconds(),
                fakeAppStore: fakePID.flatMap { ProcessTreeCPU.seconds(root: $0) },
                postgres: postmaster.flatMap { ProcessTreeCPU.seconds(root: $0) }
            )
        }
        defer { _ = cpuTimeline.stop() }
        let workerStart = ContinuousClock.now
        let running = try WorkerThread(worker)
        let inFlight = try InFlightSampler(start: workerStart, interval: 0.05) { running.worker.jobsInHand }
        defer { _ = sampler.stop(); _ = inFlight.stop(); running.stop() }

        let cpuBefore = ProcessResources.cpuSeconds()
        let machineBefore = MachineCPU.now()
        let postgresBefore = postmaster.flatMap { ProcessTreeCPU.seconds(root: $0) }
        let fakeBefore = environment.fakeProcess?.cpuSeconds
        let workBefore = try DatabaseWork.mark(admin)
        let deadline = ContinuousClock.now + .seconds(configuration.timeoutSeconds)
        var lastShown = ContinuousClock.now
        let finished = recorder.waitForBulk(until: deadline) { counts in
            guard ContinuousClock.now - lastShown >= .seconds(2) else { return }
            lastShown = ContinuousClock.now
            progress("\(counts.final) of \(ids.count) final")
        }
        let timeline = cpuTimeline.stop()
        let transportAtEnd = environment.transport?.statistics
        let callSpan = recorder.callSpan
        let cpuSeconds = ProcessResources.cpuSeconds() - cpuBefore
        let machineBusy = MachineCPU.now().flatMap { after in machineBefore.map { after.busySeconds - $0.busySeconds } }
        let postgresCPU = postmaster.flatMap { ProcessTreeCPU.seconds(root: $0) }
            .flatMap { after in postgresBefore.map { after - $0 } }
        let fakeCPU = environment.fakeProcess?.cpuSeconds.flatMap { after in fakeBefore.map { after - $0 } }
        let databaseWork = try DatabaseWork.since(workBefore, admin)
        // After the CPU figures (the request costs both sides a little), before the idle pickup calls reach the fake.
        let standIn = environment.fakeStats().map(BenchReport.AppleStandIn.init)
        guard finished else {
            throw BenchError(
                "only \(recorder.bulkCounts.final) of \(ids.count) receipts were final after "
                    + "\(configuration.timeoutSeconds) s (--timeout)"
            )
        }
        if let error = running.error { throw error }
        guard let span = recorder.bulkSpan else { throw BenchError("the worker reported no verdicts") }
        let drainSeconds = (span.last - span.first).seconds
        let phases = Self.phases(
            workerStart: workerStart, span: span, calls: callSpan,
            sent: transportAtEnd?.lastAttached, answered: transportAtEnd?.lastFinished,
            cpu: (timeline, timelineStart)
        )
        let inHandPerSecond = inFlight.stop()
        let coresBusyStep = Self.coresBusyStep(drainSeconds: drainSeconds)
        let verdictsPerSecond = recorder.verdictsPerSecond(from: workerStart)

        progress("all final; measuring idle pickup with \(configuration.pickupSamples) single jobs")
        let pickup = try measurePickup(admin: admin, recorder: recorder, tag: tag)
        let settled = settle(after: span.last)
        let connections = sampler.stop()
        running.stop()

        let counts = recorder.bulkCounts
        let (latencies, ledgerRows) = try readBack(admin: admin, tag: tag)
        let transport = environment.transport?.statistics ?? TransportStatistics()
        let views = try OperatorViews.time(admin)
        var report = BenchReport(
            receipts: ids.count,
            inputBytes: inputBytes,
            source: signer == nil
                ? "receipts" : configuration.confirm ? "signed transactions, confirmed" : "signed transactions",
            appleLatencyMs: configuration.appleLatencyMilliseconds,
            appleJitterMs: configuration.appleJitterMilliseconds,
            maxInFlight: configuration.maxInFlight,
            claimBatch: workerConfiguration.claimBatch,
            writeBatch: workerConfiguration.writeBatch,
            writeConnections: workerConfiguration.writeConnections,
            database: environment.databaseDescription,
            fsync: isTemporaryCluster ? configuration.fsync : nil,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            enqueueSeconds: enqueueSeconds,
            enqueuePerSecond: Double(ids.count) / max(enqueueSeconds, 1e-9),
            drainSeconds: drainSeconds,
            verdictsPerSecond: Double(counts.final) / max(drainSeconds, 1e-9),
            timeline: BenchReport.Timeline(
                verdicts: verdictsPerSecond, jobsInHand: inHandPerSecond,
                coresBusy: timeline.coresBusy(
                    from: (span.first - timelineStart).seconds, to: (span.last - timelineStart).seconds,
                    step: coresBusyStep
                ),
                coresBusyStep: coresBusyStep,
                coresBusyParts: timeline.partsRead(
                    worker: environment.fakeProcess == nil ? "worker and fake App Store" : "worker"
                )
            ),
            phases: phases,
            verified: counts.verified,
            rejected: counts.rejected,
            dead: counts.dead,
            retries: counts.retries,
            lost: counts.lost,
            ledgerRows: ledgerRows,
            enqueueToVerdict: LatencySummary(microseconds: latencies),
            claimToWritten: LatencySummary(microseconds: recorder.heldTimes),
            appleCall: LatencySummary(microseconds: recorder.callTimes),
            idlePickup: LatencySummary(microseconds: pickup),
            appleTLS: configuration.tls,
            appleHTTPVersions: Dictionary(uniqueKeysWithValues: transport.responses.map { ($0.key.rawValue, $0.value) }),
            appleSocketsPeak: transport.peakOpenSockets,
            appleSocketsOpened: transport.socketsOpened,
            peakRSSMebibytes: Double(ProcessResources.peakResidentBytes() ?? 0) / 1_048_576,
            rssAtWorkerStartMebibytes: Double(residentAtWorkerStart) / 1_048_576,
            settledRSSMebibytes: settled.map { Double($0.bytes) / 1_048_576 },
            settledSeconds: settled?.seconds,
            fakeAppStoreProcessPeakRSSMebibytes: environment.fakeProcess?.peakResidentBytes
                .map { Double($0) / 1_048_576 },
            appleStandIn: standIn,
            dbConnectionsWorkerMax: connections.worker,
            dbConnectionsAllMax: connections.all,
            processCPUSeconds: cpuSeconds,
            postgresCPUSeconds: postgresCPU,
            fakeAppStoreProcessCPUSeconds: fakeCPU,
            machineBusyCPUSeconds: machineBusy,
            databaseWork: databaseWork
        )
        report.prefillRows = configuration.prefill
        report.prefillSeconds = prefillSeconds
        report.viewMilliseconds = views
        return report
    }

    /// The report's "cores busy" figures are per quarter second, or per as many quarters as keep them to 40.
    static func coresBusyStep(drainSeconds: Double) -> Double {
        guard drainSeconds.isFinite, drainSeconds > 10 else { return 0.25 }
        return (drainSeconds / 40 / 0.25).rounded(.up) * 0.25
    }

    /// The drain's phases from the first claim, the last verdict, the worker's calls and the transport's moments.
    static func phases(
        workerStart: ContinuousClock.Instant,
        span: (first: ContinuousClock.Instant, last: ContinuousClock.Instant),
        calls: (lastStarted: ContinuousClock.Instant, lastAnswered: ContinuousClock.Instant)?,
        sent: ContinuousClock.Instant?, answered: ContinuousClock.Instant?,
        cpu: (timeline: CPUTimeline, start: ContinuousClock.Instant)? = nil
    ) -> BenchReport.Phases? {
        guard let calls, let sent, let answered else { return nil }
        func used(_ from: ContinuousClock.Instant, _ to: ContinuousClock.Instant) -> CPUReading? {
            cpu.flatMap { $0.timeline.used(from: (from - $0.start).seconds, to: (to - $0.start).seconds) }
        }
        return BenchReport.Phases(
            startToFirstClaim: (span.first - workerStart).seconds,
            firstClaimToLastSend: (sent - span.first).seconds,
            firstClaimToLastCallStarted: (calls.lastStarted - span.first).seconds,
            lastSendToLastAnswer: (answered - sent).seconds,
            lastAnswerToLastVerdict: (span.last - answered).seconds,
            lastAnswerToLastRead: (calls.lastAnswered - answered).seconds,
            cpuFirstClaimToLastSend: used(span.first, sent),
            cpuLastSendToLastAnswer: used(sent, answered),
            cpuLastAnswerToLastVerdict: used(answered, span.last)
        )
    }

    /// With `--settle-seconds`: waits, the worker idle, until that long after `lastVerdict`, then reads the resident
    /// set; the seconds are those actually passed (the pickup probe may have taken longer).
    private func settle(after lastVerdict: ContinuousClock.Instant) -> (seconds: Double, bytes: Int)? {
        guard configuration.settleSeconds > 0 else { return nil }
        let until = lastVerdict + .milliseconds(Int(configuration.settleSeconds * 1_000))
        if until > ContinuousClock.now {
            progress(String(format: "idle until %.0f s after the last verdict", configuration.settleSeconds))
            Thread.sleep(forTimeInterval: (until - ContinuousClock.now).seconds)
        }
        guard let bytes = ProcessResources.residentBytes() else { return nil }
        return ((ContinuousClock.now - lastVerdict).seconds, bytes)
    }

    private var isTemporaryCluster: Bool {
        if case .temporaryCluster = configuration.database { return true }
        return false
    }

    /// Makes the run's receipts (or signed transactions) and enqueues them; returns the job ids, the receipts'
    /// average size, and when enqueueing began. The receipts themselves end here, before the worker starts, so they
    /// do not count in its peak memory.
    private func makeAndEnqueue(
        tag: String, signer: JWSSigner?, fake: FakeAppStoreServer?, admin: PostgresConnection
    ) throws -> (ids: [Int64], inputBytes: Int, started: ContinuousClock.Instant) {
        let orders: [BenchReceipts.Order]
        if configuration.confirm, let fake {
            progress("adding \(configuration.receipts) purchases to the fake App Store")
            orders = try BenchReceipts.storeOrders(count: configuration.receipts, tag: tag, store: fake.purchases)
        } else if let signer {
            progress("signing \(configuration.receipts) transactions")
            orders = try BenchReceipts.signedOrders(count: configuration.receipts, tag: tag, signer: signer)
        } else {
            progress("making \(configuration.receipts) scenario receipts")
            orders = BenchReceipts.orders(
                count: configuration.receipts, tag: tag, prefix: "", receiptBytes: configuration.receiptBytes
            )
        }
        let inputBytes = orders.isEmpty ? 0 : orders.reduce(0) { $0 + $1.receiptData.utf8.count } / orders.count
        progress("enqueueing")
        let started = ContinuousClock.now
        let ids = try BenchEnqueuer(connection: admin).enqueue(
            orders, batch: configuration.enqueueBatch, signed: signer != nil
        )
        return (ids, inputBytes, started)
    }

    /// `--postgres-pid`: it must be the parent of this run's own backend, or the CPU read would be another server's.
    func checkedPostmaster(_ pid: Int32, admin: PostgresConnection) throws -> Int32 {
        let backend = try admin.query("SELECT pg_backend_pid() AS pid").int64(0, "pid")
        guard let backend, ProcessTreeCPU.parent(of: Int32(backend)) == pid else {
            throw BenchError(
                "--postgres-pid \(pid) is not the postmaster of DATABASE_URL's server on this machine (the run's "
                    + "backend, process \(backend.map(String.init) ?? "?"), is not its child)"
            )
        }
        return pid
    }

    /// As `work` counts them (`OpenFileLimit.demand`): with HTTP/1.1, each call in flight holds a client socket;
    /// with HTTP/2 (TLS, or h2c where libcurl can reuse it), at most the transport's connection cap. The fake App
    /// Store in this process holds as many server sockets.
    func checkFileLimit() throws {
        let limit = OpenFileLimit.raiseToHardLimit()
        let separate = configuration.fakeAppStoreCommand != nil
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: configuration.maxInFlight,
            to: [(configuration.tls ? "https" : "http") + "://127.0.0.1/verifyReceipt"],
            httpVersion: configuration.http1 ? .http1_1 : .http2WithLoopbackCleartext,
            maxHostConnections: configuration.maxConnections
        )
        let demand = OpenFileLimit.demand(of: transport, otherFiles: 0)
        let needed = (separate ? 1 : 2) * demand.sockets + 256
        guard needed <= limit else {
            throw BenchError(
                "--max-in-flight \(configuration.maxInFlight) needs about \(needed) file descriptors (\(demand.reason)"
                    + "\(separate ? "" : ", on each side, the fake App Store being in this process")), but the "
                    + "limit is \(limit): lower --max-in-flight to \(max(1, (limit - 256) / (separate ? 1 : 2)))"
                    + (separate ? "" : ", or run the fake App Store in its own process (--fake-process)")
                    + ", use HTTP/2 (--tls), or raise the hard limit (ulimit -Hn)"
            )
        }
    }

    func makeWorkerConfiguration(tag: String) -> WorkerConfiguration {
        let slowest = Double(configuration.appleLatencyMilliseconds + configuration.appleJitterMilliseconds) / 1000
        var worker = WorkerConfiguration(
            workerId: "bench-\(tag)",
            maxInFlight: configuration.maxInFlight,
            leaseSeconds: max(60, 4 * (slowest + 30)),
            retry: RetryPolicy(baseSeconds: 1, maxSeconds: 5, maxAttempts: 10),
            rules: RulesConfiguration(bundleIds: [BenchEnvironment.bundleId]),
            shutdownGraceSeconds: slowest + 10
        )
        if let claimBatch = configuration.claimBatch { worker.claimBatch = claimBatch }
        if let writeBatch = configuration.writeBatch { worker.writeBatch = writeBatch }
        if let writeConnections = configuration.writeConnections { worker.writeConnections = writeConnections }
        return worker
    }

    /// Enqueues single jobs one at a time (5–20 ms apart) while the worker is idle; returns, per job, the time
    /// from sending the enqueue call to the worker holding the job, in microseconds.
    private func measurePickup(admin: PostgresConnection, recorder: VerdictRecorder, tag: String) throws -> [Int64] {
        guard configuration.pickupSamples > 0 else { return [] }
        // Let the claim loop settle into its idle wait (LISTEN, poll interval) after the drain.
        Thread.sleep(forTimeInterval: 1.5)
        recorder.startRecordingProbes()
        let store = JobStore(connection: admin)
        let orders = BenchReceipts.orders(
            count: configuration.pickupSamples, tag: tag, prefix: "probe-", receiptBytes: configuration.receiptBytes
        )
        var sent: [(id: Int64, at: ContinuousClock.Instant)] = []
        for order in orders {
            let at = ContinuousClock.now
            let id = try store.enqueue(
                receiptData: order.receiptData, orderId: order.orderId, userId: order.userId,
                productId: BenchReceipts.productId, transactionId: order.transactionId,
                bundleId: BenchEnvironment.bundleId
            )
            sent.append((id, at))
            Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.020))
        }
        let slowest = Double(configuration.appleLatencyMilliseconds + configuration.appleJitterMilliseconds) / 1000
        let claims = recorder.probeClaims(sent.map(\.id), until: .now + .seconds(slowest + 30))
        let missing = sent.filter { claims[$0.id] == nil }.count
        if missing > 0 { throw BenchError("\(missing) pickup probe jobs were not written within \(slowest + 30) s") }
        return sent.compactMap { probe in
            claims[probe.id].map { Int64(($0 - probe.at).seconds * 1e6) }
        }
    }

    /// The bulk jobs' enqueue → verdict times (finished_at − created_at, database clock) in microseconds, and the
    /// ledger rows credited for them.
    private func readBack(admin: PostgresConnection, tag: String) throws -> ([Int64], Int) {
        let pattern = "order-\(tag)-%"
        let probes = "order-\(tag)-probe-%"
        let rows = try admin.query(
            """
            SELECT (extract(epoch FROM finished_at - created_at) * 1000000)::bigint AS us
            FROM receipt_jobs
            WHERE bundle_id = $1 AND order_id LIKE $2 AND order_id NOT LIKE $3 AND finished_at IS NOT NULL
            """,
            [BenchEnvironment.bundleId, pattern, probes]
        )
        let latencies = rows.rows.indices.compactMap { rows.int64($0, "us") }
        let ledger = try admin.query(
            """
            SELECT count(*) AS n FROM receipt_transactions
            WHERE bundle_id = $1 AND order_id LIKE $2 AND order_id NOT LIKE $3
            """,
            [BenchEnvironment.bundleId, pattern, probes]
        )
        return (latencies, Int(ledger.int64(0, "n") ?? 0))
    }
}
