// Reliability tests: real `receipt-worker work` processes killed, paused and starved of PostgreSQL or Apple, then
// every promise checked in SQL (Invariants.check). They run in the normal suite in under ~3 minutes:
//
//   swift build --build-tests --scratch-path .build-rel && \
//   swift test --skip-build --scratch-path .build-rel --filter "Reliability|BadInput"
//
// The long version (more jobs, more kills, longer outages; about 4 minutes on 2 cores):
//
//   RELIABILITY_LONG=1 swift test --skip-build --scratch-path .build-rel --filter "Reliability|BadInput"
//
// The `receipt-worker` binary the tests run is the one beside the test bundle (the same scratch path), or
// RECEIPT_WORKER_BINARY.
#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import Testing

extension Reliability {
    @Suite("Reliability: worker processes killed and paused at random", .serialized, .ownThread)
    struct ChaosTests {
        /// Three worker processes drain the queue while a chaos loop SIGKILLs one at a random moment (just started and
        /// claiming, waiting on Apple, writing back) and starts a replacement, and now and then SIGSTOPs one for longer
        /// than its lease and lets it run again (a paused process waking up with stale leases and late answers).
        @Test("SIGKILL and SIGSTOP at random while three workers drain the queue: every job final, each purchase credited once")
        func killAtRandom() async throws {
            let jobs = Reliability.pick(300, long: 3000)
            let minimumKills = Reliability.pick(12, long: 120)
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 150, jitterMilliseconds: 600))

            // One purchase per receipt; every tenth order replays an earlier receipt under another order,
            // every 25th receipt is a sandbox one (two calls per attempt: a kill can land between them).
            var items: [(receipt: String, order: String, user: String, product: String)] = []
            var receipts: [Int: String] = [:]
            for index in 0..<jobs {
                if index % 10 == 9, let original = receipts[index - 5] {
                    items.append((original, "chaos-replay-\(index)", "user-\(index % 7)", "gems"))
                    continue
                }
                let receipt = Harness.receipt(
                    environment: index % 25 == 0 ? "Sandbox" : "Production",
                    purchases: [Harness.purchase("chaos-\(index)", product: "gems")]
                )
                receipts[index] = receipt
                items.append((receipt, "chaos-\(index)", "user-\(index % 7)", "gems"))
            }
            // A replay and its original belong to different users and race: whichever is written first is credited,
            // the other ends already_credited (or owned_by_other_user). One credit per pair either way.
            try world.enqueueAll(items)
            let replays = items.filter { $0.order.hasPrefix("chaos-replay-") }.count

            for _ in 0..<3 { try world.startWorker() }
            var kills = 0
            var pauses = 0
            var earlyKills = 0
            // Jobs seen still running under a SIGKILLed worker after it died: only a rescue can finish them.
            var heldAtKill = 0
            var generator = SystemRandomNumberGenerator()
            let chaosDeadline = Date(timeIntervalSinceNow: Reliability.pick(90, long: 900))
            // Finished before enough kills: work added so that the remaining kills still hit busy workers.
            func addLateJob() throws {
                let index = items.count
                let receipt = Harness.receipt(purchases: [Harness.purchase("chaos-late-\(index)", product: "gems")])
                try world.enqueue(receipt, order: "chaos-late-\(index)", product: "gems")
                items.append((receipt, "chaos-late-\(index)", "user-1", "gems"))
            }
            while Date() < chaosDeadline {
                let unfinished = try world.unfinished()
                if unfinished == 0 && kills >= minimumKills && heldAtKill > 0 { break }
                if unfinished == 0 { try addLateJob() }
                await Wait.seconds(Double.random(in: 0.2...1.0, using: &generator))
                var victim = try #require(world.workers.randomElement(using: &generator))
                #expect(victim.isRunning, "a worker exited by itself: \(victim.output.suffix(2000))")
                if Int.random(in: 0..<6, using: &generator) == 0 {
                    // Paused past its lease: its jobs are rescued and finished elsewhere; when it runs again, its renewals
                    // and late writes must be refused by the lease guard.
                    kill(victim.pid, SIGSTOP)
                    let expired = try await world.waitUntil(30) { try world.liveLeases(of: victim) == 0 }
                    #expect(expired, "a paused worker's leases did not expire")
                    kill(victim.pid, SIGCONT)
                    pauses += 1
                    continue
                }
                if heldAtKill == 0 {
                    // Random kills can all land between jobs (a worker waiting for its next claim; once 12 in a row
                    // did). Until one has hit jobs in hand, the kill waits (bounded) for a worker that holds some on
                    // a live lease and takes that one; if none does within the bound, the random victim, and the
                    // next kill tries again. The kills after it are random.
                    // A late job added above may be answered (150-750 ms) before the wait starts: with the backlog
                    // drained, one added now gives the workers something to hold (a busy machine once let 8 kills in
                    // a row miss).
                    if try world.unfinished() == 0 { try addLateJob() }
                    var holder: ChildProcess?
                    _ = try await world.waitUntil(15, poll: 0.01) {
                        holder = try world.workers.first { try world.liveLeases(of: $0) > 0 }
                        return holder != nil
                    }
                    victim = holder ?? victim
                }
                kill(victim.pid, SIGKILL)
                #expect(await victim.exit(within: 10) == 128 + SIGKILL)
                heldAtKill += try world.heldJobs(of: victim)
                world.forget(victim)
                kills += 1
                let replacement = try world.startWorker()
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    // Killed again while starting up and making its first claim.
                    await Wait.seconds(Double.random(in: 0.05...0.4, using: &generator))
                    kill(replacement.pid, SIGKILL)
                    _ = await replacement.exit(within: 10)
                    heldAtKill += try world.heldJobs(of: replacement)
                    world.forget(replacement)
                    kills += 1
                    earlyKills += 1
                    try world.startWorker()
                }
            }
            #expect(kills >= minimumKills, "only \(kills) SIGKILLs within the chaos phase")
            #expect(heldAtKill > 0, "no SIGKILL within the chaos phase landed while the victim held jobs")
            let drained = try await world.waitUntil(Reliability.pick(60, long: 300)) { try world.unfinished() == 0 }
            #expect(drained, "jobs still unfinished: \((try? world.unfinished()) ?? -1)")
            // Late answers of paused workers, refused by the lease guard (survivors' logs only).
            let refused = world.workers.map { $0.lines(containing: "lease lost").count }.reduce(0, +)
            for status in await world.stopWorkers() {
                #expect(status == 0, "a worker did not exit 0 on SIGTERM")
            }

            let report = try world.invariants()
            let total = items.count
            #expect(report.jobs == total)
            #expect(report.count("dead") == 0, "\(report)")
            #expect(report.count("verified") == total - replays, "\(report)")
            #expect(report.count(reason: "already_credited") + report.count(reason: "owned_by_other_user") == replays, "\(report)")
            #expect(report.ledgerRows == total - replays)
            // The kills hit jobs in hand (at least one was made to): those jobs were rescued after their lease expired.
            #expect(report.rescues > 0, "no job was ever rescued: the kills did not land while jobs were held")
            print(
                "chaos: \(total) jobs, \(kills) SIGKILLs (\(earlyKills) at start-up, \(heldAtKill) jobs held at kills), \(pauses) SIGSTOP pauses, "
                    + "\(refused) late writes refused; \(report)"
            )
        }

        /// Orchestrators stop a pod or unit whenever they like, also while it is still starting. From the process's
        /// first code on (CSignals blocks SIGTERM and SIGINT in `.preinit_array`, before any library initialiser and
        /// before `main`) a SIGTERM waits until `work` has its handler in place; what comes before is the next test.
        @Test("SIGTERM at any moment of start-up from the process's first code on, with jobs waiting: exit 0, no job left running")
        func terminatedWhileStarting() async throws {
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 1_000))
            for index in 0..<20 {
                try world.enqueue(Harness.receipt(purchases: [Harness.purchase("early-\(index)")]), order: "early-\(index)")
            }
            for delay in [0.0, 0.005, 0.02, 0.035, 0.05, 0.065, 0.08, 0.1, 0.2, 0.4, 0.8] {
                let worker = try world.startWorker()
                let held = await worker.holdsTerminationSignals(within: 30)
                try #require(held, "the process never blocked or caught SIGTERM: \(worker.output.suffix(2000))")
                await Wait.seconds(delay)
                worker.signal(SIGTERM)
                let status = await worker.exit(within: 15)
                let moment = "SIGTERM \(Int(delay * 1000)) ms after its first code"
                #expect(status == 0, "\(moment): exit \(String(describing: status)); output: \(worker.output.suffix(3000))")
                world.forget(worker)
                #expect(try world.count(state: "running") == 0, "jobs left running after a graceful stop")
            }
            // Nothing was charged for the interrupted starts: every attempt given back.
            #expect(try world.int("SELECT count(*) FROM receipt_jobs WHERE attempts > 0 AND state = 'queued'") == 0)
            try world.startWorker()
            #expect(try await world.waitUntil(30) { try world.unfinished() == 0 })
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == 20)
        }

        /// Between exec and the process's first code, the kernel and the dynamic loader (mapping and relocating the
        /// shared libraries: about 10–20 ms for the debug build) run no code of the program, so nothing can hold a
        /// signal there: a SIGTERM then takes its default action, status 143 (README, exit codes). Each child is
        /// frozen with SIGSTOP at once or a little later, which shows where it stands (SIGTERM blocked or caught, or neither yet), and
        /// then sent SIGTERM: the status must follow from where it stood, both ways.
        @Test("SIGTERM before the process's first code ends it with 143; from its first code on, with exit 0")
        func terminatedBeforeFirstCode() async throws {
            var inWindow = 0
            let delays = [0.0, 0.0, 0.0, 0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4]
            for delay in delays {
                let child = try ChildProcess(
                    ["work"],
                    environment: ChildProcess.environment(
                        removing: ["APPLE_SHARED_SECRET_FILE", "METRICS_PORT", "LOG_FORMAT"],
                        setting: [
                            "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
                            "APPLE_BUNDLE_IDS": "com.example.app", "LOG_LEVEL": "critical",
                        ]
                    )
                )
                if delay > 0 { await Wait.seconds(delay) }
                child.signal(SIGSTOP)
                let stopped = await child.stopped(within: 10)
                try #require(stopped, "the child did not stop")
                let held = child.terminationSignalsHeld
                child.signal(SIGTERM)
                child.signal(SIGCONT)
                let status = await child.exit(within: 30)
                if held {
                    #expect(status == 0, "SIGTERM held from the first code on, yet exit \(String(describing: status))")
                } else {
                    inWindow += 1
                    #expect(status == 128 + SIGTERM, "exit \(String(describing: status)): \(child.output.suffix(2000))")
                }
            }
            #expect(inWindow > 0, "no SIGSTOP landed before the process's first code")
            print(
                "start-up window: \(inWindow) of \(delays.count) SIGTERMs landed before the first code (143), "
                    + "\(delays.count - inWindow) after it (0)"
            )
        }

        /// A worker frozen (SIGSTOP) while its calls are in flight, past its lease: another worker rescues and verifies
        /// the jobs; when the first one runs again, its lease renewals and its late answers must be refused.
        @Test("a worker paused past its lease wakes up: its late answers are refused, each purchase credited once")
        func pausedWorkerWakesUp() async throws {
            let jobs = 6
            // Answers 12 s after each request, so that the SIGSTOP below lands while the calls are in flight even on
            // a loaded machine (2.5 s was a narrow window); the sleeper waits up to 30 s for them.
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 12_000))
            for index in 0..<jobs {
                try world.enqueue(Harness.receipt(purchases: [Harness.purchase("zombie-\(index)")]), order: "zombie-\(index)")
            }
            let sleeper = try world.startWorker(["APPLE_TIMEOUT_SECONDS": "30"])
            #expect(try await world.waitUntil(20) { try world.count(state: "running") == jobs })
            // Every request has reached Apple (the fake counts a request as it arrives, and answers 12 s later).
            #expect(try await world.waitUntil(20) { try world.fakeServer.stats().total == jobs })
            kill(sleeper.pid, SIGSTOP)
            // Frozen past its lease: a sweep (the one the invariants run for a scenario stopped half-way) takes every
            // job back, and none stays running on a lease that has run out.
            let expired = try await world.waitUntil(30) { try world.liveLeases(of: sleeper) == 0 }
            #expect(expired, "the frozen worker's leases did not expire")
            let halfway = try world.invariants(allowWaiting: true)
            #expect(halfway.count("running") == 0, "\(halfway)")
            #expect(halfway.count("queued") == jobs, "\(halfway)")
            try world.fakeServer.setLatency(milliseconds: 0, jitter: 0)
            let rescuer = try world.startWorker()
            #expect(try await world.waitUntil(30) { try world.count(state: "verified") == jobs }, "the rescuer did not verify the jobs")
            await Wait.seconds(1)
            kill(sleeper.pid, SIGCONT)
            let refused = await world.waitUntil(20) { sleeper.lines(containing: "lease lost").count >= jobs }
            #expect(refused, "late answers not refused: \(sleeper.output.suffix(3000))")
            #expect(sleeper.isRunning && rescuer.isRunning)
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == jobs)
            #expect(report.ledgerRows == jobs)
            #expect(report.rescues == jobs, "\(report)")
        }

        /// The write-back itself interrupted: the worker's write is made to wait on a lock inside its transaction
        /// (after the guarded job update, before the ledger insert), then the worker is SIGKILLed; then, in a second
        /// round, the connection of a writing worker is cut with pg_terminate_backend.
        @Test("killed while writing back, or its connection cut mid-write: every job final, each purchase credited once")
        func interruptedWriteBack() async throws {
            let world = try ProcessWorld()
            let locker = try PostgresConnection(world.databaseURL)
            defer { locker.close() }
            func waitingWriter() throws -> String? {
                try world.query(
                    """
                    SELECT pid::text FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'receipt-worker' AND wait_event_type = 'Lock'
                    """
                ).rows.first?.first ?? nil
            }
            for round in 0..<2 {
                for index in 0..<10 {
                    try world.enqueue(Harness.receipt(purchases: [Harness.purchase("write-\(round)-\(index)")]),
                                      order: "write-\(round)-\(index)")
                }
                try locker.execute("BEGIN")
                try locker.execute("LOCK TABLE receipt_transactions IN SHARE ROW EXCLUSIVE MODE")
                let worker = try world.startWorker()
                var writer: String?
                #expect(try await world.waitUntil(20) { writer = try waitingWriter(); return writer != nil },
                        "no worker ever waited inside its write")
                if round == 0 {
                    kill(worker.pid, SIGKILL)
                    #expect(await worker.exit(within: 10) == 128 + SIGKILL)
                    world.forget(worker)
                } else if let writer {
                    #expect(try world.query("SELECT pg_terminate_backend($1::int)", [writer]).rows.first?.first == "t")
                }
                try locker.execute("COMMIT")
            }
            // The dead worker's jobs are rescued by the survivor's scheduler once their lease expires.
            #expect(try await world.waitUntil(40) { try world.unfinished() == 0 }, "unfinished: \((try? world.unfinished()) ?? -1)")
            for worker in world.workers { #expect(worker.isRunning) }
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == 20, "\(report)")
            #expect(report.ledgerRows == 20)
            print("interrupted write-back: 20 jobs, 1 SIGKILL mid-write, 1 backend terminated mid-write; \(report)")
        }
    }
}
#endif
