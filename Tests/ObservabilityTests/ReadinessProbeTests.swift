import Foundation
import Observability
import Synchronization
import Testing

@Suite("ReadinessProbe: cached, bounded in time, one check at a time")
struct ReadinessProbeTests {
    @Test("an answer is reused for cacheFor")
    func caching() throws {
        let checks = Mutex(0)
        let probe = ReadinessProbe(cacheFor: .seconds(3_600)) {
            checks.withLock { $0 += 1 }
            return .ready
        }
        for _ in 0..<5 { #expect(probe.evaluate() == .ready) }
        #expect(checks.withLock { $0 } == 1)
    }

    @Test("once cacheFor has passed, the next caller checks again")
    func cacheExpiry() throws {
        let checks = Mutex(0)
        let cacheFor = Duration.milliseconds(100)
        let probe = ReadinessProbe(cacheFor: cacheFor) {
            checks.withLock { $0 += 1 }
            return .ready
        }
        #expect(probe.evaluate() == .ready)
        // The answer was cached before evaluate() returned: from here on, waiting cacheFor is enough.
        let answered = ContinuousClock.now
        while ContinuousClock.now - answered < cacheFor {
            Thread.sleep(forTimeInterval: 0.02)
        }
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
        defer { release.signal() }
        // The check hangs until released: the first caller is answered by its timeout, not by the check.
        let started = ContinuousClock.now
        let first = probe.evaluate()
        #expect(!first.isReady)
        #expect(first.reason == "the database did not answer within 2 s")
        #expect(ContinuousClock.now - started >= .seconds(2))

        // A later caller does not wait out another timeout: it is answered before evaluate returns, told the check
        // still hangs.
        let second = Mutex<Readiness?>(nil)
        probe.evaluate { answer in second.withLock { $0 = answer } }
        let answeredAtOnce = try #require(second.withLock { $0 }, "the caller was left waiting")
        #expect(answeredAtOnce.reason.hasPrefix("the database has not answered for"), "\(answeredAtOnce.reason)")
        #expect(checks.withLock { $0 } == 1)

        // Once the check returns, its answer is the new state.
        release.signal()
        var answer = probe.evaluate()
        let deadline = ContinuousClock.now + .seconds(60)
        while !answer.isReady && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            answer = probe.evaluate()
        }
        #expect(answer == .ready)
        #expect(checks.withLock { $0 } == 1)
        #expect(observed.withLock { $0.first?.isReady } == false)
        #expect(observed.withLock { $0.last?.isReady } == true)
    }

    @Test("callers waiting together share one check and one answer")
    func concurrentCallers() throws {
        let checks = Mutex(0)
        let release = DispatchSemaphore(value: 0)
        let probe = ReadinessProbe(timeout: .seconds(3_600), cacheFor: .zero) {
            checks.withLock { $0 += 1 }
            release.wait()
            return .notReady("no")
        }
        defer { for _ in 0..<8 { release.signal() } }
        // Eight callers arrive while the first one's check is held: each is registered before evaluate returns.
        let answers = Mutex<[Readiness]>([])
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            probe.evaluate { answer in
                answers.withLock { $0.append(answer) }
                group.leave()
            }
        }
        #expect(answers.withLock { $0 }.isEmpty)
        release.signal()
        try #require(group.wait(timeout: .now() + 60) == .success)
        #expect(answers.withLock { $0 } == Array(repeating: .notReady("no"), count: 8))
        #expect(checks.withLock { $0 } == 1)
    }

    @Test("a reason is kept to one line")
    func oneLine() {
        let answer = Readiness.notReady("connection failed:\n\tIs the server running?")
        #expect(answer.reason == "connection failed: Is the server running?")
        #expect("\(answer)" == "not ready: connection failed: Is the server running?")
    }
}
