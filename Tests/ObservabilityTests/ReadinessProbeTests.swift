import Foundation
import Observability
import Synchronization
import Testing

@Suite("ReadinessProbe: cached, bounded in time, one check at a time")
struct ReadinessProbeTests {
    @Test("an answer is reused for cacheFor, then checked again")
    func caching() throws {
        let checks = Mutex(0)
        let probe = ReadinessProbe(cacheFor: .milliseconds(300)) {
            checks.withLock { $0 += 1 }
            return .ready
        }
        for _ in 0..<5 { #expect(probe.evaluate() == .ready) }
        #expect(checks.withLock { $0 } == 1)
        Thread.sleep(forTimeInterval: 0.4)
        #expect(probe.evaluate() == .ready)
        #expect(checks.withLock { $0 } == 2)
    }

    @Test("a hanging check: callers get 'not ready' within the timeout, later ones at once, and no second check starts")
    func hangingCheck() throws {
        let checks = Mutex(0)
        let release = DispatchSemaphore(value: 0)
        let observed = Mutex<[Readiness]>([])
        let probe = ReadinessProbe(
            timeout: .seconds(2), cacheFor: .seconds(60), subject: "the database",
            observer: { answer in observed.withLock { $0.append(answer) } }
        ) {
            checks.withLock { $0 += 1 }
            release.wait()
            return .ready
        }
        let started = ContinuousClock.now
        let first = probe.evaluate()
        #expect(!first.isReady)
        #expect(first.reason == "the database did not answer within 2 s")
        #expect(ContinuousClock.now - started >= .seconds(2))
        #expect(ContinuousClock.now - started < .seconds(60), "the caller waited for the hanging check")

        // A later caller does not wait out another timeout: the check still hangs, and it is told so.
        let again = ContinuousClock.now
        let second = probe.evaluate()
        #expect(second.reason.hasPrefix("the database has not answered for"), "\(second.reason)")
        #expect(ContinuousClock.now - again < .seconds(2))
        #expect(checks.withLock { $0 } == 1)

        // Once the check returns, its answer is the new state.
        release.signal()
        var answer = probe.evaluate()
        let deadline = ContinuousClock.now + .seconds(5)
        while !answer.isReady && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            answer = probe.evaluate()
        }
        #expect(answer == .ready)
        #expect(observed.withLock { $0.first?.isReady } == false)
        #expect(observed.withLock { $0.last?.isReady } == true)
    }

    @Test("callers waiting together share one check and one answer")
    func concurrentCallers() async throws {
        let checks = Mutex(0)
        let probe = ReadinessProbe(cacheFor: .zero) {
            checks.withLock { $0 += 1 }
            Thread.sleep(forTimeInterval: 0.1)
            return .notReady("no")
        }
        let answers = await withTaskGroup(of: Readiness.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        probe.evaluate { continuation.resume(returning: $0) }
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 8)
        #expect(answers.allSatisfy { $0 == .notReady("no") })
        #expect(checks.withLock { $0 } <= 2)  // a caller arriving just after the first check finished starts another
    }

    @Test("a reason is kept to one line")
    func oneLine() {
        let answer = Readiness.notReady("connection failed:\n\tIs the server running?")
        #expect(answer.reason == "connection failed: Is the server running?")
        #expect("\(answer)" == "not ready: connection failed: Is the server running?")
    }
}
