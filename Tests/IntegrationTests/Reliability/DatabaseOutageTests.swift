#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import Testing

extension Reliability {
    /// PostgreSQL crashing, stopped at start-up and stopped mid-run, under real worker processes. Each test has a
    /// cluster of its own with fsync on (the shared test cluster is never restarted).
    @Suite("Reliability: PostgreSQL crashes and outages", .serialized, .ownThread)
    struct DatabaseOutageTests {
        static func receipts(_ count: Int, prefix: String) -> [(receipt: String, order: String, user: String, product: String)] {
            (0..<count).map { index in
                let receipt = Harness.receipt(purchases: [Harness.purchase("\(prefix)-\(index)", product: "gems")])
                return (receipt, "\(prefix)-\(index)", "user-\(index % 5)", "gems")
            }
        }

        /// The lines of `output` (text logs) where a connection tried the database again sooner than the pause its
        /// previous "database unavailable" line announced: each connection retries, and logs, once per pause.
        static func pausesNotKept(_ output: String) -> [String] {
            var previous: [String: (at: Date, pause: Double)] = [:]
            var early: [String] = []
            for line in output.split(separator: "\n") where line.contains("database unavailable, retrying") {
                guard let at = logTime(line),
                    let connection = line.firstMatch(of: /connection=([\w-]+)/).map({ String($0.output.1) }),
                    let pause = line.firstMatch(of: /retry_in_s=([0-9.]+)/).flatMap({ Double($0.output.1) })
                else { continue }
                if let last = previous[connection], at.timeIntervalSince(last.at) < last.pause - 0.05 {
                    early.append("\(at.timeIntervalSince(last.at)) s after a pause of \(last.pause) s: \(line.prefix(160))")
                }
                previous[connection] = (at, pause)
            }
            return early
        }

        @Test("PostgreSQL killed (immediate shutdown) and restarted during work: committed credits survive, workers carry on")
        func crashRestart() async throws {
            let jobs = Reliability.pick(200, long: 2000)
            let restarts = Reliability.pick(2, long: 8)
            let world = try ProcessWorld(
                ownCluster: true, fake: FakeAppStoreConfiguration(latencyMilliseconds: 100, jitterMilliseconds: 200)
            )
            let cluster = try #require(world.cluster)
            try world.enqueueAll(Self.receipts(jobs, prefix: "crash"))
            // A few calls in flight per worker, so the backlog spans the restarts.
            for _ in 0..<3 { try world.startWorker(["MAX_IN_FLIGHT": "4"]) }
            // And jobs enqueued just before each crash, in Apple's hands (100–300 ms) when the server goes down, so
            // the workers have work in progress at every crash however the test's own polling is scheduled.
            let burst = 20
            let total = jobs + restarts * burst

            var survived = 0
            var pendingAtCrash: [Int] = []
            for round in 1...restarts {
                let target = jobs * round / (restarts + 1)
                #expect(
                    try await world.waitUntil(60) { try world.count(state: "verified") >= target },
                    "round \(round): fewer than \(target) verified"
                )
                // What is committed now must be there after the crash.
                let before = try world.query(
                    "SELECT t.credit_key, t.job_id::text FROM receipt_transactions t ORDER BY 1"
                ).rows
                try world.enqueueAll(Self.receipts(burst, prefix: "crash-round\(round)"))
                pendingAtCrash.append(try world.unfinished())
                try cluster.restart(mode: "immediate")
                let after = Set(try world.query("SELECT t.credit_key, t.job_id::text FROM receipt_transactions t").rows)
                let lost = before.filter { !after.contains($0) }
                #expect(lost.isEmpty, "committed ledger rows lost in the crash: \(lost.prefix(5))")
                survived += before.count
                for worker in world.workers {
                    #expect(worker.isRunning, "a worker died with PostgreSQL: \(worker.output.suffix(2000))")
                }
            }
            #expect(try await world.waitUntil(90) { try world.unfinished() == 0 }, "unfinished: \((try? world.unfinished()) ?? -1)")
            let reconnects = world.workers.map {
                $0.lines(containing: "database reachable again").count
                    + $0.lines(containing: "database connection lost, reconnecting").count
            }
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == total, "\(report)")
            #expect(report.ledgerRows == total)
            // Each worker kept running and the backlog drained (above). Only a worker whose connections were used
            // between a crash and the end has something to notice: one idle on LISTEN when the last jobs went to the
            // others may not; at least one must have reconnected, and logged it.
            #expect(pendingAtCrash.allSatisfy { $0 > 0 }, "a crash found every job final: \(pendingAtCrash)")
            #expect(reconnects.contains { $0 > 0 }, "no worker noticed the crashes: \(reconnects)")
            print("crash restart: \(total) jobs, \(restarts) immediate restarts, \(survived) committed ledger rows checked; \(report)")
        }

        @Test("PostgreSQL down when the workers start: they wait (no crash loop), then work when it comes up")
        func downAtStartup() async throws {
            let jobs = Reliability.pick(60, long: 600)
            let outage = Reliability.pick(4.0, long: 30.0)
            let world = try ProcessWorld(ownCluster: true, fake: FakeAppStoreConfiguration(latencyMilliseconds: 20))
            let cluster = try #require(world.cluster)
            try world.enqueueAll(Self.receipts(jobs, prefix: "startup"))
            world.db.close()
            try cluster.stopServer(mode: "fast")

            // With a password in DATABASE_URL (trust authentication ignores it): the connection errors logged while
            // PostgreSQL is down must not show it.
            let password = "pw-\(UUID().uuidString.prefix(12))"
            let withPassword = world.databaseURL.replacingOccurrences(of: "postgres@", with: "postgres:\(password)@")
            let first = try world.startWorker(["DATABASE_URL": withPassword])
            let second = try world.startWorker(["DATABASE_URL": withPassword, "LOG_LEVEL": "debug", "LOG_FORMAT": "json"])
            let down = Date()
            while Date().timeIntervalSince(down) < outage {
                await Wait.seconds(0.25)
                #expect(first.isRunning && second.isRunning, "a worker exited while PostgreSQL was down: \(first.output)")
            }
            #expect(!first.lines(containing: "waiting for it").isEmpty, "no 'waiting' log line: \(first.output.prefix(3000))")
            // Backoff, not a hot loop: a few retries per connection per second at most.
            let retries = first.lines(containing: "database unavailable, retrying").count
            #expect(retries < Int(outage * 12), "\(retries) retry lines in \(outage) s")

            // The pause between connection attempts grows, and never beyond 5 s (its cap).
            let pauses = first.lines(containing: "retry_in_s=").compactMap { line in
                line.firstMatch(of: /retry_in_s=([0-9.]+)/).flatMap { Double($0.output.1) }
            }
            #expect(!pauses.isEmpty && pauses.allSatisfy { $0 <= 5 }, "\(pauses)")

            #expect(first.lines(containing: "worker started").isEmpty, "started before the database answered")
            try cluster.startServer()
            #expect(try await world.waitUntil(60) { try world.count(state: "verified") > 0 })
            // Each worker starts once its next try reaches the database (up to a 5 s pause away; the other worker
            // may have verified jobs before then).
            #expect(await first.line(containing: "worker started", within: 60) != nil, "\(first.output.suffix(2000))")
            #expect(try await world.waitUntil(60) { try world.unfinished() == 0 })
            #expect(first.lines(containing: "worker started").count == 1, "\(first.output.suffix(2000))")
            #expect(first.isRunning && second.isRunning)
            for status in await world.stopWorkers() { #expect(status == 0) }
            for worker in [first, second] {
                #expect(!worker.output.contains(password), "the database password is in the logs")
                #expect(worker.output.contains("database reachable again"))
            }
            let report = try world.invariants()
            #expect(report.count("verified") == jobs, "\(report)")
            print("startup outage: \(jobs) jobs, PostgreSQL down \(outage) s at start-up, \(retries) retry log lines; \(report)")
        }

        /// When a text log line was written, by the worker's clock.
        static func logTime(_ line: Substring) -> Date? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: String(line.prefix(24)))
        }

        @Test("SIGTERM while PostgreSQL is down and the worker pauses between tries: exit 0 within the pause, no try after")
        func terminatedWhileDatabaseDown() async throws {
            let world = try ProcessWorld(ownCluster: true, fake: FakeAppStoreConfiguration(latencyMilliseconds: 20))
            let cluster = try #require(world.cluster)
            world.db.close()
            try cluster.stopServer(mode: "fast")
            let worker = try world.startWorker()
            // The pause between tries grows to 5 s. The worker is signalled early in such a pause (less than a
            // second after its line, by the worker's clock; a line noticed later is let go by for the next pause):
            // a worker that waited its pause out would stop only after the end its line announced, and would try
            // the database once more first.
            let longPauses = { worker.lines(containing: "retry_in_s=5.0") }
            #expect(await world.waitUntil(60) { !longPauses().isEmpty }, "\(worker.output.prefix(2000))")
            var pauseStart: Date?
            for _ in 0..<10 where pauseStart == nil {
                let seen = longPauses().count
                #expect(await world.waitUntil(60, poll: 0.01) { longPauses().count > seen }, "\(worker.output.prefix(2000))")
                guard let line = longPauses().last, let at = Self.logTime(line), Date().timeIntervalSince(at) < 1 else {
                    continue
                }
                #expect(worker.isRunning, "\(worker.output)")
                worker.signal(SIGTERM)
                pauseStart = at
            }
            let start = try #require(pauseStart, "no pause was noticed early enough to signal in it")
            let status = await worker.exit(within: 60)
            #expect(status == 0, "exit \(String(describing: status)): \(worker.output.suffix(2000))")

            let stopped = try #require(
                worker.lines(containing: "worker stopped before the database was reached").first, "\(worker.output)"
            )
            let stoppedAt = try #require(Self.logTime(stopped))
            #expect(stoppedAt < start.addingTimeInterval(5), "stopped \(stoppedAt.timeIntervalSince(start)) s into a 5 s pause")
            let afterSignal = worker.output.split(separator: "\n").drop { !$0.contains("stopping: no new claims") }
            #expect(!afterSignal.isEmpty, "the stop was not logged: \(worker.output.suffix(2000))")
            #expect(
                !afterSignal.contains { $0.contains("database unavailable, retrying") },
                "the database was tried again after SIGTERM: \(afterSignal.prefix(5))"
            )
            world.forget(worker)
            try cluster.startServer()
        }

        @Test("PostgreSQL stopped for a while mid-run: no worker exits, no job lost or dead, the backlog drains after")
        func downMidRun() async throws {
            let jobs = Reliability.pick(150, long: 1500)
            let outage = Reliability.pick(4.0, long: 30.0)
            let world = try ProcessWorld(
                ownCluster: true, fake: FakeAppStoreConfiguration(latencyMilliseconds: 100, jitterMilliseconds: 200)
            )
            let cluster = try #require(world.cluster)
            try world.enqueueAll(Self.receipts(jobs, prefix: "midrun"))
            for _ in 0..<3 { try world.startWorker() }
            #expect(try await world.waitUntil(60) { try world.count(state: "verified") >= jobs / 4 })

            world.db.close()
            try cluster.stopServer(mode: "fast")
            let down = Date()
            while Date().timeIntervalSince(down) < outage {
                await Wait.seconds(0.25)
                for worker in world.workers {
                    #expect(worker.isRunning, "a worker exited while PostgreSQL was down: \(worker.output.suffix(2000))")
                }
            }
            try cluster.startServer()
            #expect(try await world.waitUntil(90) { try world.unfinished() == 0 }, "unfinished: \((try? world.unfinished()) ?? -1)")
            // Every loop (claim, write, maintenance) kept to its backoff while PostgreSQL was away.
            for worker in world.workers {
                #expect(!worker.lines(containing: "connection=maintenance").isEmpty, "\(worker.output.suffix(2000))")
                let early = Self.pausesNotKept(worker.output)
                #expect(early.isEmpty, "retried before the announced pause: \(early.prefix(5))")
            }
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == jobs, "\(report)")
            #expect(report.count("dead") == 0)
            print("mid-run outage: \(jobs) jobs, PostgreSQL stopped \(outage) s with 3 workers running; \(report)")
        }
    }
}
#endif
