#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import LocalPostgres
import PostgresClient
import Synchronization
import Testing

/// The release rule (docs/deployment.md, "Releases and upgrades"): this version's migrations keep the previous
/// release's workers and API calls working. The previous release (scripts/previous-release) is built from its commit
/// by scripts/build-previous-release.sh (or taken from PREVIOUS_RELEASE_BINARY); scripts/test.sh runs this suite as a
/// group of its own after building it.
@Suite("Upgrade: the previous release's workers and API calls through this version's migrate", .serialized, .ownThread)
struct UpgradeTests {
    /// The previous release's binary, and the source tree it was built from (its sql/ and deploy/).
    static func previousRelease() throws -> (binary: String, source: URL) {
        var binary = ProcessInfo.processInfo.environment["PREVIOUS_RELEASE_BINARY"] ?? ""
        if binary.isEmpty {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [TestServer.repositoryRoot.appendingPathComponent("scripts/build-previous-release.sh").path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "scripts/build-previous-release.sh failed: \(printed)")
            binary = printed.split(separator: "\n").last.map(String.init) ?? ""
        }
        try #require(FileManager.default.isExecutableFile(atPath: binary), "no previous release binary at \(binary)")
        // <source>/.build/debug/receipt-worker
        let source = URL(fileURLWithPath: binary).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (binary, source)
    }

    /// What the API layer did meanwhile: jobs it enqueued, verdicts it took, and every call the database refused.
    final class APILayer: Sendable {
        private struct State {
            var enqueued: [Int64] = []
            var delivered = 0
            var refused: [String] = []
            var stop = false
            var stopped = false
        }

        private let state = Mutex(State())
        let url: String

        init(url: String) { self.url = url }

        var enqueued: [Int64] { state.withLock { $0.enqueued } }
        var delivered: Int { state.withLock { $0.delivered } }
        var refused: [String] { state.withLock { $0.refused } }

        /// Enqueues a job every 10 ms, and takes the verdicts as README shows (read the undelivered ones, then
        /// `mark_verdict_delivered()`), the calls of the previous release's API layer, until `stop()`.
        func start() {
            DispatchQueue.global().async { [self] in
                var connection: PostgresConnection?
                var index = 0
                while !state.withLock({ $0.stop }) {
                    do {
                        let db = try connection.flatMap { $0.isHealthy ? $0 : nil } ?? PostgresConnection(url)
                        connection = db
                        let job = Reliability.DatabaseOutageTests.receipts(1, prefix: "upgrade-\(index)")[0]
                        let id = try db.query(
                            "SELECT enqueue_receipt($1, $2, $3, $4, NULL, $5)",
                            [job.receipt, job.order, job.user, job.product, ProcessWorld.bundle]
                        ).rows.first?.first.flatMap { $0 }.flatMap { Int64($0) }
                        index += 1
                        state.withLock { $0.enqueued.append(id ?? -1) }
                        try deliver(db)
                    } catch {
                        state.withLock { $0.refused.append("\(error)") }
                        connection = nil
                    }
                    Thread.sleep(forTimeInterval: 0.01)
                }
                state.withLock { $0.stopped = true }
            }
        }

        /// Marks the finished, undelivered verdicts delivered.
        func deliver(_ db: PostgresConnection) throws {
            let ready = try db.query(
                "SELECT id::text FROM receipt_jobs WHERE finished_at IS NOT NULL AND delivered_at IS NULL ORDER BY id LIMIT 50"
            ).rows.compactMap { $0.first.flatMap { $0 } }
            for id in ready {
                let marked = try db.query("SELECT mark_verdict_delivered($1)", [id]).rows.first?.first.flatMap { $0 }
                if marked == "t" { state.withLock { $0.delivered += 1 } }
            }
        }

        func stop() async {
            state.withLock { $0.stop = true }
            while !state.withLock({ $0.stopped }) { await Wait.seconds(0.02) }
        }
    }

    @Test("Previous release's work before, during and after this version's migrate, the API layer enqueueing throughout: nothing refused, nothing lost")
    func previousWorkersThroughMigrate() async throws {
        let previous = try Self.previousRelease()
        let cluster = try LocalPostgresCluster.start(options: .init(maxConnections: 100))
        defer { cluster.stop() }
        let ownerURL = try cluster.createDatabase("rw_upgrade")
        func url(as login: String) -> String {
            ownerURL.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://\(login)@")
        }
        func command(
            _ arguments: [String], executable: String? = nil, _ setting: [String: String]
        ) async throws -> (status: Int32?, output: String) {
            let child = try ChildProcess(arguments, executable: executable, environment: ChildProcess.environment(setting: setting))
            let status = await child.exit(within: 300)
            return (status, child.output)
        }

        // The database as the previous release left it: its migrations, its roles.
        let oldSQL = previous.source.appendingPathComponent("sql").path
        let oldMigrate = try await command(
            ["migrate"], executable: previous.binary, ["DATABASE_URL": ownerURL, "RECEIPT_WORKER_SQL_DIR": oldSQL]
        )
        try #require(oldMigrate.status == 0, "the previous release's migrate: \(oldMigrate.output)")
        let roles = try MigrationTests.psql(
            ownerURL, file: previous.source.appendingPathComponent("deploy/sql/roles.sql").path
        )
        try #require(roles.status == 0, "the previous release's roles.sql: \(roles.output)")
        let owner = try PostgresConnection(ownerURL)
        defer { owner.close() }
        try owner.execute("CREATE ROLE worker_login LOGIN IN ROLE receipt_worker; CREATE ROLE api_login LOGIN IN ROLE receipt_api")

        let fake = try FakeAppStoreServer.start(
            FakeAppStoreConfiguration(threads: 1, sharedSecret: Harness.secret, latencyMilliseconds: 50, jitterMilliseconds: 100)
        )
        defer { fake.stop() }
        let workerEnvironment = [
            "DATABASE_URL": url(as: "worker_login"), "RECEIPT_WORKER_SQL_DIR": oldSQL,
            "APPLE_SHARED_SECRET": Harness.secret, "APPLE_BUNDLE_IDS": TestServer.bundleIds.joined(separator: ","),
            "APPLE_PRODUCTION_URL": fake.productionURL, "APPLE_SANDBOX_URL": fake.sandboxURL,
            "APPLE_TIMEOUT_SECONDS": "5", "LEASE_SECONDS": "2", "POLL_INTERVAL_SECONDS": "0.1",
            "RETRY_BASE_SECONDS": "0.1", "RETRY_MAX_SECONDS": "0.5", "SHUTDOWN_GRACE_SECONDS": "1",
        ]
        func startOldWorker() async throws -> ChildProcess {
            let worker = try ChildProcess(
                ["work"], executable: previous.binary,
                environment: ChildProcess.environment(removing: ["APPLE_SHARED_SECRET_FILE", "METRICS_PORT", "LOG_FORMAT"], setting: workerEnvironment)
            )
            #expect(await worker.line(containing: "worker started", within: 60) != nil, "\(worker.output.suffix(3000))")
            return worker
        }
        var workers = [try await startOldWorker()]
        defer { for worker in workers { worker.signal(SIGKILL) } }

        let api = APILayer(url: url(as: "api_login"))
        api.start()
        await Wait.seconds(1.5)
        let beforeMigrate = api.enqueued.count

        // This version's migrate, as its schema owner, while the old worker verifies and the API layer enqueues.
        let newMigrate = try await command(
            ["migrate"], ["DATABASE_URL": ownerURL, "RECEIPT_WORKER_SQL_DIR": TestServer.sqlDirectory]
        )
        #expect(newMigrate.status == 0, "this version's migrate: \(newMigrate.output)")
        await Wait.seconds(1.5)
        // A previous-release worker (re)started after the migrate, as one would be in a rolling upgrade.
        workers.append(try await startOldWorker())
        await Wait.seconds(1.5)
        await api.stop()

        let enqueued = api.enqueued
        func int(_ sql: String) throws -> Int { Int(try owner.query(sql).rows.first?.first.flatMap { $0 } ?? "") ?? -1 }
        let deadline = Date(timeIntervalSinceNow: 90)
        while try int("SELECT count(*) FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead')") > 0,
            Date() < deadline
        {
            await Wait.seconds(0.2)
        }
        let apiConnection = try PostgresConnection(url(as: "api_login"))
        defer { apiConnection.close() }
        try api.deliver(apiConnection)
        try api.deliver(apiConnection)

        #expect(api.refused.isEmpty, "API calls refused: \(api.refused.prefix(5))")
        #expect(beforeMigrate > 0 && enqueued.count > beforeMigrate, "enqueued \(beforeMigrate) before migrate, \(enqueued.count) in all")
        #expect(Set(enqueued).count == enqueued.count && !enqueued.contains(-1))
        let report = try Invariants.check(owner, enqueued: enqueued.count)
        #expect(report.count("verified") == enqueued.count, "\(report)")
        #expect(report.ledgerRows == enqueued.count, "\(report)")
        #expect(try int("SELECT count(*) FROM receipt_jobs WHERE delivered_at IS NULL") == 0)
        for worker in workers {
            worker.signal(SIGTERM)
            #expect(await worker.exit(within: 30) == 0, "\(worker.output.suffix(3000))")
            #expect(!worker.output.contains("permission denied"), "\(worker.output.suffix(3000))")
            let errors = worker.lines(containing: " error receipt-worker:")
            #expect(errors.isEmpty, "\(errors.prefix(5))")
        }
        print("upgrade: \(enqueued.count) jobs enqueued by receipt_api (\(beforeMigrate) before this version's migrate), "
            + "verified by the previous release's workers, \(api.delivered) verdicts delivered; \(report)")
    }
}
#endif
