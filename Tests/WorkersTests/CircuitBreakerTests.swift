import Foundation
import Testing
import Workers

/// The breaker with its defaults: window 40, at least 20 samples, open at ≥ 50 % failures, a probe every 5 s,
/// recovery from 20 claims/s doubling every 5 s up to 5000/s. Time is simulated: seconds passed in.
@Suite("CircuitBreaker")
struct CircuitBreakerTests {
    let configuration = CircuitBreaker.Configuration()

    private func record(_ breaker: CircuitBreaker, answered: Int = 0, failed: Int = 0, now: Double) {
        for _ in 0..<answered { breaker.record(answered: true, now: now) }
        for _ in 0..<failed { breaker.record(answered: false, now: now) }
    }

    /// A breaker opened at `now` by 20 failures in a row.
    private func openBreaker(at now: Double) -> CircuitBreaker {
        let breaker = CircuitBreaker()
        record(breaker, failed: 20, now: now)
        return breaker
    }

    /// A breaker that opened at `openedAt` and saw a successful probe at `recoveredAt`.
    private func recoveringBreaker(openedAt: Double = 0, recoveredAt: Double = 5) -> CircuitBreaker {
        let breaker = openBreaker(at: openedAt)
        breaker.record(answered: true, now: recoveredAt)
        return breaker
    }

    /// The ramp's claims per second, `elapsed` seconds into recovery.
    private func rate(_ elapsed: Double) -> Double {
        configuration.recoveryStartRate * pow(2, elapsed / configuration.recoveryDoublingSeconds)
    }

    @Test("the defaults")
    func defaults() {
        #expect(configuration.window == 40)
        #expect(configuration.minimumSamples == 20)
        #expect(configuration.failureRatio == 0.5)
        #expect(configuration.probeIntervalSeconds == 5)
        #expect(configuration.recoveryStartRate == 20)
        #expect(configuration.recoveryDoublingSeconds == 5)
        #expect(configuration.recoveryFullRate == 5000)
    }

    @Test("closed: every wanted job is allowed")
    func closedAllowsAll() {
        let breaker = CircuitBreaker()
        #expect(breaker.state == .closed)
        #expect(breaker.allowance(wanted: 200, now: 0) == 200)
        #expect(breaker.allowance(wanted: 0, now: 0) == 0)
    }

    @Test("fewer than 20 samples never open it, even all failed")
    func underMinimumSamples() {
        let breaker = CircuitBreaker()
        record(breaker, failed: 19, now: 0)
        #expect(breaker.state == .closed)
        #expect(breaker.allowance(wanted: 50, now: 0) == 50)
        breaker.record(answered: false, now: 0)
        #expect(breaker.state == .open)
    }

    @Test("under 50 % failures it stays closed; at 50 % of 20 it opens")
    func ratioThreshold() {
        let below = CircuitBreaker()
        record(below, answered: 11, failed: 9, now: 0)
        #expect(below.state == .closed)

        let atThreshold = CircuitBreaker()
        record(atThreshold, answered: 10, failed: 9, now: 0)
        #expect(atThreshold.state == .closed)  // 19 samples
        atThreshold.record(answered: false, now: 0)
        #expect(atThreshold.state == .open)     // 10 of 20
    }

    @Test("the window slides: only the last 40 outcomes count")
    func slidingWindow() {
        let breaker = CircuitBreaker()
        record(breaker, failed: 5, now: 0)
        record(breaker, answered: 35, now: 0)  // the window is full: 5 of 40 failed
        #expect(breaker.state == .closed)
        // New failures replace the oldest outcomes first: the 5 old failures, then successes. Were the old failures
        // still counted, 15 new ones would already make 20.
        record(breaker, failed: 19, now: 0)    // 19 of the last 40 failed
        #expect(breaker.state == .closed)
        breaker.record(answered: false, now: 0)  // 20 of 40
        #expect(breaker.state == .open)
    }

    @Test("open: 0 right after opening, exactly 1 probe once probeIntervalSeconds have passed, then 0 again")
    func openProbes() {
        let breaker = openBreaker(at: 100)
        #expect(breaker.state == .open)
        #expect(breaker.allowance(wanted: 50, now: 100) == 0)
        #expect(breaker.allowance(wanted: 50, now: 104.9) == 0)
        #expect(breaker.allowance(wanted: 0, now: 105) == 0)  // asking for nothing spends no probe
        #expect(breaker.allowance(wanted: 50, now: 105) == 1)
        #expect(breaker.allowance(wanted: 50, now: 105) == 0)
        #expect(breaker.allowance(wanted: 50, now: 109.9) == 0)
        #expect(breaker.allowance(wanted: 50, now: 110) == 1)
    }

    @Test("open for a simulated minute, polled every 100 ms: exactly one probe per 5 s")
    func openMinute() {
        let breaker = openBreaker(at: 0)
        var total = 0
        for tenth in 1...600 {
            let allowed = breaker.allowance(wanted: 1000, now: Double(tenth) / 10)
            #expect(allowed == 0 || allowed == 1)
            total += allowed
        }
        #expect(total == 12)
        #expect(breaker.state == .open)
    }

    @Test("a failed probe keeps it open; a successful outcome starts recovery")
    func probeOutcome() {
        let breaker = openBreaker(at: 0)
        breaker.record(answered: false, now: 5)
        #expect(breaker.state == .open)
        breaker.record(answered: true, now: 10)
        #expect(breaker.state == .recovering)
    }

    @Test("recovering: one claim at once, then the allowance follows the ramp (burst capped at the rate)")
    func rampAllowance() {
        let breaker = recoveringBreaker(recoveredAt: 5)
        #expect(breaker.allowance(wanted: 1000, now: 5) == 1)
        #expect(breaker.allowance(wanted: 1000, now: 5) == 0)
        // 10 s in: 20 × 2² = 80 per second; an idle breaker has saved at most one second's worth.
        #expect(breaker.allowance(wanted: 1000, now: 15) == 80)
        #expect(breaker.allowance(wanted: 1000, now: 15) == 0)
        // 20 s in: 320 per second.
        #expect(breaker.allowance(wanted: 1000, now: 25) == 320)
        // Never more than wanted.
        #expect(breaker.allowance(wanted: 3, now: 30) == 3)
        #expect(breaker.state == .recovering)
    }

    @Test("recovering: the sum of allowances over a simulated second is bounded by the ramp",
          arguments: [0.0, 10, 20, 30])
    func rampBoundedPerSecond(startOffset: Double) {
        let breaker = recoveringBreaker(recoveredAt: 0)
        // Claim everything allowed every millisecond until `startOffset`, so no tokens are saved up…
        var millisecond = 0
        while Double(millisecond) / 1000 < startOffset {
            _ = breaker.allowance(wanted: 100_000, now: Double(millisecond) / 1000)
            millisecond += 1
        }
        // …then count one second of claims.
        var total = 0
        for step in 0...1000 {
            total += breaker.allowance(wanted: 100_000, now: startOffset + Double(step) / 1000)
        }
        let expected = rate(startOffset) * 5 / log(2) * (pow(2, 1.0 / 5) - 1)  // ∫ rate over the second
        #expect(Double(total) <= rate(startOffset + 1) + 1, "\(total) claims in second \(startOffset)")
        #expect(Double(total) >= expected - 2 && Double(total) <= expected + 2, "\(total), ramp says \(expected)")
        #expect(breaker.state == .recovering)
    }

    @Test("closes once the ramp reaches recoveryFullRate (20 × 2^(t/5) ≥ 5000 at t ≈ 39.8 s)")
    func closesAtFullRate() {
        let breaker = recoveringBreaker(recoveredAt: 5)
        #expect(breaker.allowance(wanted: 10_000, now: 5 + 39) <= Int(rate(39)))
        #expect(breaker.state == .recovering)
        #expect(breaker.allowance(wanted: 10_000, now: 5 + 40) == 10_000)
        #expect(breaker.state == .closed)
        #expect(breaker.allowance(wanted: 10_000, now: 5 + 40) == 10_000)
    }

    @Test("failures during recovery reopen it")
    func failuresReopen() {
        let breaker = recoveringBreaker(recoveredAt: 5)
        record(breaker, failed: 19, now: 6)  // the window was emptied at recovery: not enough samples yet
        #expect(breaker.state == .recovering)
        breaker.record(answered: false, now: 7)
        #expect(breaker.state == .open)
        #expect(breaker.allowance(wanted: 100, now: 7) == 0)
        #expect(breaker.allowance(wanted: 100, now: 12) == 1)
    }

    @Test("mostly successful outcomes during recovery keep it recovering")
    func successesKeepRecovering() {
        let breaker = recoveringBreaker(recoveredAt: 5)
        for second in 0..<10 {
            record(breaker, answered: 3, failed: 1, now: 5 + Double(second))
        }
        #expect(breaker.state == .recovering)
    }

    @Test("a second outage after recovery opens it again")
    func reopensAfterClosing() {
        let breaker = recoveringBreaker(recoveredAt: 5)
        #expect(breaker.allowance(wanted: 1, now: 100) == 1)
        #expect(breaker.state == .closed)
        record(breaker, failed: 20, now: 200)
        #expect(breaker.state == .open)
        #expect(breaker.allowance(wanted: 100, now: 201) == 0)
    }
}
