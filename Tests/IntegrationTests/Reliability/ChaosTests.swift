// Reliability tests: real `receipt-worker work` processes killed, paused and starved of PostgreSQL or Apple, then
// every promise checked in SQL (Invariants.check). They run in the normal suite in under ~3 minutes:
//
//   swift build --build-tests --scratch-path .build-rel && \
//   swift test --skip-build --scratch-path .build-rel --filter "Reliability|BadInput"
//
// The long version (more jobs, more kills, longer outages; about 15 minutes):
//
//   RELIABILITY_LONG=1 swift test --skip-build --scratch-path .build-rel --filter "Reliability|BadInput"
//
// The `receipt-worker` binary the tests run is the one beside the test bundle (the same scratch path), or
// RECEIPT_WORKER_BINARY.
#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import Testing

extension Reliability {
    @Suite("Reliability: worker processes killed and paused at random", .serialized)
    struct ChaosTests {
        /// Three worker processes drain the queue while a chaos loop SIGKILLs one at a random moment (just started and
        /// claiming, waiting on Apple, writing back) and starts a replacement, and now and then SIGSTOPs one for longer
        /// than its lease and lets it run again (a paused process waking up with stale leases and late answers).
        @Test("SIGKILL and SIGSTOP at random while three workers drain the queue: every job final, each purchase credited once")
        func killAtRandom() throws {
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
            var generator = SystemRandomNumberGenerator()
            let chaosDeadline = Date(timeIntervalSinceNow: Reliability.pick(90, long: 900))
            while Date() < chaosDeadline {
                let unfinished = try world.unfinished()
                if unfinished == 0 && kills >= minimumKills { break }
                if unfinished == 0 {
                    // Finished before enough kills: add work so the remaining kills still hit busy workers.
                    let index = items.count
                    let receipt = Harness.receipt(purchases: [Harness.purchase("chaos-late-\(index)", product: "gems")])
                    try world.enqueue(receipt, order: "chaos-late-\(index)", product: "gems")
                    items.append((receipt, "chaos-late-\(index)", "user-1", "gems"))
                }
                Thread.sleep(forTimeInterval: Double.random(in: 0.2...1.0, using: &generator))
                let victim = try #require(world.workers.randomElement(using: &generator))
                #expect(victim.isRunning, "a worker exited by itself: \(victim.output.suffix(2000))")
                if Int.random(in: 0..<6, using: &generator) == 0 {
                    // Paused past its lease: its jobs are rescued and finished elsewhere; when it runs again, its renewals
                    // and late writes must be refused by the lease guard.
                    kill(victim.pid, SIGSTOP)
                    Thread.sleep(forTimeInterval: 3.5)
                    kill(victim.pid, SIGCONT)
                    pauses += 1
                    continue
                }
                kill(victim.pid, SIGKILL)
                #expect(victim.wait(timeout: 10) == 128 + SIGKILL)
                world.forget(victim)
                kills += 1
                let replacement = try world.startWorker()
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    // Killed again while starting up and making its first claim.
                    Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.4, using: &generator))
                    kill(replacement.pid, SIGKILL)
                    _ = replacement.wait(timeout: 10)
                    world.forget(replacement)
                    kills += 1
                    earlyKills += 1
                    try world.startWorker()
                }
            }
            let drained = try world.waitUntil(Reliability.pick(60, long: 300)) { try world.unfinished() == 0 }
            #expect(drained, "jobs still unfinished: \((try? world.unfinished()) ?? -1)")
            for status in world.stopWorkers() {
                #expect(status == 0, "a worker did not exit 0 on SIGTERM")
            }

            let report = try world.invariants()
            let total = items.count
            #expect(report.jobs == total)
            #expect(report.count("dead") == 0, "\(report)")
            #expect(report.count("verified") == total - replays, "\(report)")
            #expect(report.count(reason: "already_credited") + report.count(reason: "owned_by_other_user") == replays, "\(report)")
            #expect(report.ledgerRows == total - replays)
            // The kills hit jobs in hand: some were rescued after their lease expired.
            #expect(report.rescues > 0, "no job was ever rescued: the kills did not land while jobs were held")
            print("chaos: \(total) jobs, \(kills) SIGKILLs (\(earlyKills) at start-up), \(pauses) SIGSTOP pauses; \(report)")
        }
    }
}
#endif
