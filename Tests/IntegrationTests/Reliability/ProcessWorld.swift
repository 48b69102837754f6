#if os(Linux)
import CurlHTTP
import FakeAppStore
import Foundation
import Glibc
import LocalPostgres
import PostgresClient
import ReceiptQueue
import Testing

/// Short by default; `RELIABILITY_LONG=1` for the long version (more jobs, more kills, longer outages).
enum Reliability {
    static let long = ProcessInfo.processInfo.environment["RELIABILITY_LONG"] == "1"

    static func pick<T>(_ short: T, long value: T) -> T { long ? value : short }
}

/// A database and a fake App Store for tests that run real `receipt-worker work` processes against them.
/// The database is a fresh one on the shared test cluster, or — for tests that crash or stop PostgreSQL — a
/// cluster of its own with fsync on, so that what was committed survives a crash.
/// The fake App Store can be stopped and started again on the same port (an outage of Apple).
final class ProcessWorld {
    static let secret = Harness.secret
    static let bundle = "com.example.app"

    let databaseURL: String
    let cluster: LocalPostgresCluster?
    private(set) var fake: FakeAppStoreServer?
    private var fakeConfiguration: FakeAppStoreConfiguration
    let productionURL: String
    let sandboxURL: String
    let db: PostgresConnection
    let store: JobStore
    private(set) var workers: [ChildProcess] = []
    /// The distinct job ids enqueue returned.
    private(set) var enqueued: Set<Int64> = []

    init(ownCluster: Bool = false, fake configuration: FakeAppStoreConfiguration = .init()) throws {
        CurlGlobal.initialize()
        if ownCluster {
            let cluster = try LocalPostgresCluster.start(options: .init(fsync: true, maxConnections: 100))
            self.cluster = cluster
            databaseURL = try cluster.createDatabase("rw_reliability")
            let connection = try PostgresConnection(databaseURL)
            defer { connection.close() }
            try Migrator(directory: TestServer.sqlDirectory).migrate(connection)
            try JobStore(connection: connection).registerApps(TestServer.bundleIds)
        } else {
            cluster = nil
            databaseURL = try TestServer.get().freshDatabase()
        }
        var configuration = configuration
        configuration.sharedSecret = configuration.sharedSecret ?? Self.secret
        configuration.threads = 1
        let fake = try FakeAppStoreServer.start(configuration)
        configuration.port = fake.port
        self.fake = fake
        fakeConfiguration = configuration
        productionURL = fake.productionURL
        sandboxURL = fake.sandboxURL
        db = try PostgresConnection(databaseURL)
        store = JobStore(connection: db)
    }

    deinit {
        for worker in workers { worker.signal(SIGKILL) }
        for worker in workers { _ = worker.wait(timeout: 10) }
        fake?.stop()
        db.close()
        cluster?.stop()
    }

    // MARK: The fake App Store

    var fakeServer: FakeAppStoreServer {
        get throws { try #require(fake, "the fake App Store is stopped") }
    }

    /// Apple goes away: nothing listens on the port any more (connections are refused).
    func stopFake() {
        fake?.stop()
        fake = nil
    }

    /// Apple comes back on the same port, with the same settings.
    func startFake() throws {
        guard fake == nil else { return }
        var lastError: (any Error)?
        for _ in 0..<50 {
            do {
                fake = try FakeAppStoreServer.start(fakeConfiguration)
                return
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        throw TestSetupError("the fake App Store could not listen on port \(fakeConfiguration.port) again: \(String(describing: lastError))")
    }

    // MARK: Worker processes

    /// The environment of a `receipt-worker` child: this database, the fake App Store, short leases and polls.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var setting = [
            "DATABASE_URL": databaseURL,
            "APPLE_SHARED_SECRET": Self.secret,
            "APPLE_BUNDLE_IDS": TestServer.bundleIds.joined(separator: ","),
            "APPLE_PRODUCTION_URL": productionURL,
            "APPLE_SANDBOX_URL": sandboxURL,
            "APPLE_TIMEOUT_SECONDS": "5",
            "LEASE_SECONDS": "2",
            "POLL_INTERVAL_SECONDS": "0.1",
            "RETRY_BASE_SECONDS": "0.1",
            "RETRY_MAX_SECONDS": "0.5",
            "MAX_ATTEMPTS": "60",
            "MAX_IN_FLIGHT": "8",
            "SHUTDOWN_GRACE_SECONDS": "1",
            "LOG_LEVEL": "info",
        ]
        setting.merge(extra) { $1 }
        return ChildProcess.environment(
            removing: ["APPLE_SHARED_SECRET_FILE", "METRICS_PORT", "LOG_FORMAT"], setting: setting
        )
    }

    /// Starts `receipt-worker work` (with the built-in scheduler unless told otherwise).
    @discardableResult
    func startWorker(_ extra: [String: String] = [:], arguments: [String] = ["work"]) throws -> ChildProcess {
        let child = try ChildProcess(arguments, environment: environment(extra))
        workers.append(child)
        return child
    }

    /// Forgets a worker that has exited (its output stays readable through the returned object).
    func forget(_ worker: ChildProcess) {
        workers.removeAll { $0 === worker }
    }

    /// Sends SIGTERM to every worker and returns their exit statuses (nil: still running after `timeout`).
    /// Waits until each worker has run its first code: a SIGTERM before it (while the dynamic loader works) takes
    /// its default action, the subject of its own test (ChaosTests.terminatedBeforeFirstCode).
    func stopWorkers(timeout: Double = 15) async -> [Int32?] {
        for worker in workers { _ = await worker.holdsTerminationSignals(within: 10) }
        for worker in workers { worker.signal(SIGTERM) }
        var statuses: [Int32?] = []
        for worker in workers { statuses.append(await worker.exit(within: timeout)) }
        return statuses
    }

    // MARK: The database

    /// Runs a query, reconnecting while PostgreSQL is restarting (until `timeout`).
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = [], timeout: Double = 30) throws -> PostgresResult {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            do {
                if !db.isHealthy { try db.reconnect() }
                return try db.query(sql, parameters)
            } catch let error as PostgresError where error.isConnectionProblem && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    func int(_ sql: String, _ parameters: [String?] = []) throws -> Int {
        Int(try query(sql, parameters).rows.first?.first.flatMap { $0 } ?? "") ?? -1
    }

    func unfinished() throws -> Int {
        try int("SELECT count(*) FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead')")
    }

    /// Jobs `worker` holds on a lease that has not run out (by the database clock). `locked_by` is
    /// host-pid-suffix.
    func liveLeases(of worker: ChildProcess) throws -> Int {
        try int(
            "SELECT count(*) FROM receipt_jobs WHERE state = 'running' AND locked_by LIKE $1 AND lease_until > now()",
            ["%-\(worker.pid)-%"]
        )
    }

    /// Jobs still running under `worker`'s name, whatever their lease: after it died, only a rescue moves them on.
    func heldJobs(of worker: ChildProcess) throws -> Int {
        try int("SELECT count(*) FROM receipt_jobs WHERE state = 'running' AND locked_by LIKE $1", ["%-\(worker.pid)-%"])
    }

    func count(state: String) throws -> Int {
        try int("SELECT count(*) FROM receipt_jobs WHERE state = $1", [state])
    }

    /// `enqueue_receipt()`; remembers the job id.
    @discardableResult
    func enqueue(
        _ receipt: String, order: String, user: String = "user-1", product: String = "pro.monthly",
        transaction: String? = nil, bundle: String = ProcessWorld.bundle
    ) throws -> Int64 {
        let id = try store.enqueue(
            receiptData: receipt, orderId: order, userId: user, productId: product, transactionId: transaction,
            bundleId: bundle
        )
        enqueued.insert(id)
        return id
    }

    /// Enqueues many in one transaction (one fsync instead of one per job).
    func enqueueAll(_ items: [(receipt: String, order: String, user: String, product: String)]) throws {
        try db.withTransaction {
            for item in items {
                try enqueue(item.receipt, order: item.order, user: item.user, product: item.product)
            }
        }
    }

    func remember(_ id: Int64) { enqueued.insert(id) }

    /// Polls `condition` every `poll` seconds until it holds or `timeout` passes.
    func waitUntil(_ timeout: Double, poll: Double = 0.1, _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if try condition() { return true }
            await Wait.seconds(poll)
        } while Date() < deadline
        return try condition()
    }

    @discardableResult
    func invariants(
        allowWaiting: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Invariants.Report {
        if !db.isHealthy { try db.reconnect() }
        return try Invariants.check(db, enqueued: enqueued.count, allowWaiting: allowWaiting, sourceLocation: sourceLocation)
    }
}

extension ChildProcess {
    /// True while the process runs (it has not exited and was not reaped).
    var isRunning: Bool { wait(timeout: 0) == nil }

    /// The output lines (JSON or text) that contain `text`.
    func lines(containing text: String) -> [Substring] {
        output.split(separator: "\n").filter { $0.contains(text) }
    }
}
#endif
