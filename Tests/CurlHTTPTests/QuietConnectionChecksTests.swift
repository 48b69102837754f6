import Testing

@testable import CurlHTTP

/// When `TransferLoop` runs a connection again after libcurl delivered on it (`QuietConnectionChecks`).
@Suite("Quiet connections run again after delivering")
struct QuietConnectionChecksTests {
    let first = QuietConnectionChecks.Key(tag: 0, socket: 7)
    let second = QuietConnectionChecks.Key(tag: 1, socket: 7)

    @Test("a connection that delivered is due once quiet for the interval, not before, not with an event this round")
    func dueOnceQuiet() {
        var checks = QuietConnectionChecks(quietMilliseconds: 5)
        checks.startRound()
        checks.event(first, delivered: true, now: 100)
        checks.event(second, delivered: false, now: 100)
        #expect(checks.dueNow(100).isEmpty)
        #expect(checks.waitMilliseconds(now: 101) == 4)
        checks.startRound()
        #expect(checks.dueNow(104).isEmpty)
        #expect(checks.dueNow(105) == [first])
        // A socket event without delivery in this round: it was run already.
        checks.startRound()
        checks.event(first, delivered: false, now: 106)
        #expect(checks.dueNow(106).isEmpty)
        checks.startRound()
        #expect(checks.dueNow(107) == [first])
    }

    @Test("run again: next round while that delivers, forgotten once it delivers nothing")
    func againWhileDelivering() {
        var checks = QuietConnectionChecks(quietMilliseconds: 5)
        checks.startRound()
        checks.event(first, delivered: true, now: 0)
        checks.startRound()
        #expect(checks.dueNow(5) == [first])
        checks.ran(first, delivered: true, now: 5)
        #expect(checks.waitMilliseconds(now: 5) == 0)
        checks.startRound()
        #expect(checks.dueNow(5) == [first])
        checks.ran(first, delivered: false, now: 5)
        #expect(checks.isEmpty)
        #expect(checks.waitMilliseconds(now: 5) == nil)
    }

    @Test("libcurl's timers delivering keep the recently delivering connections of that multi handle waiting")
    func timersDelivering() {
        var checks = QuietConnectionChecks(quietMilliseconds: 5)
        checks.startRound()
        checks.event(first, delivered: true, now: 0)
        checks.event(second, delivered: true, now: 0)
        checks.timersDelivered(tag: 0, now: 3)
        checks.startRound()
        #expect(checks.dueNow(5) == [second])
        #expect(checks.dueNow(8) == [first, second] || checks.dueNow(8) == [second, first])
    }

    @Test("an interval of 0 turns the checks off")
    func off() {
        var checks = QuietConnectionChecks(quietMilliseconds: 0)
        checks.startRound()
        checks.event(first, delivered: true, now: 0)
        #expect(checks.isEmpty)
        #expect(checks.dueNow(1_000).isEmpty)
    }
}
