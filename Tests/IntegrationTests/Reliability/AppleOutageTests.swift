#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import Testing

extension Reliability {
    /// Apple down for a while (every call reset, then nothing listening at all), shorter than the retry window:
    /// no job goes dead, the circuit breaker keeps the calls during the outage far below one per job per retry, and
    /// the backlog drains when Apple is back.
    @Suite("Reliability: Apple outages", .serialized, .ownThread)
    struct AppleOutageTests {
        @Test("Apple resets every call, then is gone, then is back: no dead job, few calls during the outage, backlog drained")
        func outageShorterThanRetryWindow() async throws {
            let jobs = Reliability.pick(240, long: 2000)
            let resetPhase = Reliability.pick(5.0, long: 30.0)
            let downPhase = Reliability.pick(4.0, long: 30.0)
            let processes = 2
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 100, jitterMilliseconds: 100))
            // A fifth of the jobs runs before the outage; the rest is enqueued as it begins, so jobs wait through it
            // however fast the machine drains the queue.
            let receipts = DatabaseOutageTests.receipts(jobs, prefix: "outage")
            let beforeOutage = jobs / 5
            try world.enqueueAll(Array(receipts.prefix(beforeOutage)))
            // Retry window: 0.5 + 1 + 2 × 38 s ≈ 77 s, far longer than the outage (≈ 9 s; 60 s in the long run).
            let settings = ["RETRY_BASE_SECONDS": "0.5", "RETRY_MAX_SECONDS": Reliability.pick("2", long: "4"),
                            "MAX_ATTEMPTS": "40", "MAX_IN_FLIGHT": "8", "APPLE_TIMEOUT_SECONDS": "2"]
            for _ in 0..<processes { try world.startWorker(settings) }
            #expect(try await world.waitUntil(60) { try world.count(state: "verified") == beforeOutage })

            // Phase 1: every call is reset. The fake still counts the calls.
            let fake = try world.fakeServer
            let before = fake.stats().total
            let outageStart = Date()
            fake.setFaults(FaultRates(connectionReset: 1.0))
            try world.enqueueAll(Array(receipts.dropFirst(beforeOutage)))
            await Wait.seconds(resetPhase)
            let duringReset = fake.stats().total - before
            let attemptsAfterReset = try world.int("SELECT coalesce(sum(attempts), 0) FROM receipt_jobs WHERE state <> 'verified'")
            let waiting = try world.unfinished()

            // Phase 2: nothing listens on Apple's port (connection refused), then Apple is back on the same port.
            world.stopFake()
            await Wait.seconds(downPhase)
            #expect(try world.count(state: "dead") == 0, "jobs went dead during an outage shorter than the retry window")
            try world.startFake()
            let outage = Date().timeIntervalSince(outageStart)
            for worker in world.workers { #expect(worker.isRunning) }

            #expect(try await world.waitUntil(Reliability.pick(90, long: 400)) { try world.unfinished() == 0 },
                    "backlog not drained: \((try? world.unfinished()) ?? -1) unfinished")
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("dead") == 0, "\(report)")
            #expect(report.count("verified") == jobs, "\(report)")

            // Without a breaker, each waiting job would be tried about every second: jobs × seconds calls. The breaker
            // lets through about one window's worth (≈ 20–40 failures per process) and then one probe per 5 s.
            let unbounded = waiting * Int(resetPhase)
            let bound = processes * (48 + 2 * Int(resetPhase / 5 + 1))
            #expect(duringReset <= bound, "\(duringReset) calls during a \(resetPhase) s outage (breaker bound \(bound), without one ≈ \(unbounded))")
            #expect(duringReset > 0, "no call reached the fake during the outage")
            print(
                "apple outage: \(jobs) jobs, \(processes) workers, outage \(Int(outage)) s (\(resetPhase) s resets + \(downPhase) s down), "
                    + "\(duringReset) calls during the reset phase for \(waiting) waiting jobs (≈ \(unbounded) without a breaker), "
                    + "attempts on unfinished jobs after it \(attemptsAfterReset); \(report)"
            )
        }
    }
}
#endif
