import Crypto
import Synchronization
import Testing

@testable import AppStoreClient

@Suite("Pacing: token bucket and pacer, on an injected clock")
struct TokenBucketTests {
    @Test("burst 1: requests made together are spaced exactly 1/rate apart")
    func spacing() {
        var bucket = TokenBucket(rate: 50)
        let times = (0..<5).map { _ in bucket.reserve(now: 10) }
        #expect(times.map { ($0 - 10) * 1000 }.map { $0.rounded() } == [0, 20, 40, 60, 80])
    }

    @Test("a burst goes at once, the rest follows at the rate, and a quiet spell refills it")
    func burst() {
        var bucket = TokenBucket(rate: 10, burst: 3)
        let first = (0..<5).map { _ in bucket.reserve(now: 0) }
        #expect(first.map { ($0 * 10).rounded() } == [0, 0, 0, 1, 2])
        // 1 s later the slots taken up to 0.2 s are long past: three at once again.
        let later = (0..<4).map { _ in bucket.reserve(now: 1.5) }
        #expect(later.map { (($0 - 1.5) * 10).rounded() } == [0, 0, 0, 1])
    }

    @Test("no window of one second ever holds more than rate + burst sends")
    func window() {
        var bucket = TokenBucket(rate: 10, burst: 2)
        var sends: [Double] = []
        var now = 0.0
        for step in 0..<300 {
            // Arrivals in clumps: 25 at once, then a pause, then a trickle.
            now += step % 50 < 25 ? 0 : 0.07
            sends.append(bucket.reserve(now: now))
        }
        #expect(sends == sends.sorted())
        for (index, start) in sends.enumerated() {
            let inWindow = sends[index...].prefix { $0 < start + 1 - 1e-9 }.count
            #expect(inWindow <= 11)
        }
    }

    @Test("a pause (Retry-After) holds every later request until it ends")
    func pause() {
        var bucket = TokenBucket(rate: 50)
        #expect(bucket.reserve(now: 0) == 0)
        bucket.pause(until: 5)
        bucket.pause(until: 2)  // an earlier end does not shorten it
        #expect(bucket.reserve(now: 1) == 5)
        #expect(abs(bucket.reserve(now: 1) - 5.02) < 1e-9)
        #expect(bucket.reserve(now: 9) == 9)
    }

    @Test("the pacer keeps one bucket per bundle id and operation, at the configured rates")
    func pacerKeys() {
        let clock = TestClock()
        let rates: [ServerAPIOperation: Double] = [.orderLookup: 10, .transactionInfo: 50]
        let pacer = RequestPacer(rate: { rates[$0] ?? 1 }, burst: 1, maxDelaySeconds: 60, now: clock.read)
        let app = RequestPacer.Key(bundleId: "com.example.app", operation: .orderLookup)
        let other = RequestPacer.Key(bundleId: "com.example.other", operation: .orderLookup)
        let info = RequestPacer.Key(bundleId: "com.example.app", operation: .transactionInfo)
        #expect(pacer.reserve(app).milliseconds == 0)
        #expect(pacer.reserve(app).milliseconds == 100)
        #expect(pacer.reserve(other).milliseconds == 0)
        #expect(pacer.reserve(info).milliseconds == 0)
        #expect(pacer.reserve(info).milliseconds == 20)
        clock.advance(1)
        #expect(pacer.reserve(app).milliseconds == 0)
    }

    @Test("each environment has its own buckets at its own rate: Apple's sandbox limits are a tenth of production's")
    func pacerEnvironments() throws {
        let clock = TestClock()
        let key = try ServerAPIPrivateKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation)
        let configuration = ServerAPIConfiguration(keyID: "K", issuerID: "I", privateKey: key)
        let pacer = RequestPacer(
            rate: { configuration.requestsPerSecond(for: $0, in: $1) }, burst: 1, maxDelaySeconds: 60, now: clock.read
        )
        for (operation, production, sandbox) in [
            (ServerAPIOperation.transactionInfo, 20, 200), (.refundHistory, 100, 1000), (.orderLookup, 100, 1000),
            (.setAppAccountToken, 50, 500),
        ] {
            let live = RequestPacer.Key(bundleId: "b", operation: operation, environment: .production)
            let test = RequestPacer.Key(bundleId: "b", operation: operation, environment: .sandbox)
            #expect(pacer.reserve(live).milliseconds == 0)
            #expect(pacer.reserve(test).milliseconds == 0, "the sandbox waits for no production slot")
            #expect(pacer.reserve(live).milliseconds == production, "\(operation)")
            #expect(pacer.reserve(test).milliseconds == sandbox, "\(operation)")
        }
        // A 429 in the sandbox holds the sandbox only.
        let live = RequestPacer.Key(bundleId: "b", operation: .subscriptionStatuses, environment: .production)
        let test = RequestPacer.Key(bundleId: "b", operation: .subscriptionStatuses, environment: .sandbox)
        pacer.pause(test, seconds: 5)
        #expect(pacer.remainingPause(test) == 5 && pacer.remainingPause(live) == 0)
        // Configured rates win, per environment.
        var configured = configuration
        configured.sandboxRequestsPerSecond[.transactionInfo] = 2
        #expect(configured.requestsPerSecond(for: .transactionInfo, in: .sandbox) == 2)
        #expect(configured.requestsPerSecond(for: .transactionInfo, in: .production) == 50)
        configured.sandboxRequestsPerSecond[.transactionInfo] = 0
        #expect(throws: AppStoreConfigurationError.self) { try configured.validate() }
    }

    @Test("past the bound a request is not queued, and takes no slot")
    func bound() {
        let clock = TestClock()
        let pacer = RequestPacer(rate: { _ in 10 }, burst: 1, maxDelaySeconds: 0.35, now: clock.read)
        let key = RequestPacer.Key(bundleId: "b", operation: .transactionHistory)
        let decisions = (0..<6).map { _ in pacer.reserve(key) }
        #expect(decisions.prefix(4).map(\.milliseconds) == [0, 100, 200, 300])
        #expect(decisions[4].tooLong.map { Int(($0 * 1000).rounded()) } == 400)
        #expect(decisions[5].tooLong.map { Int(($0 * 1000).rounded()) } == 400)
        clock.advance(0.1)
        // The refused ones took nothing: the next slot is 0.4 s after the start, 0.3 s from now.
        #expect(pacer.reserve(key).milliseconds == 300)
    }

    @Test("a pause from a 429 holds the key: reservations and requests already waiting")
    func pacerPause() {
        let clock = TestClock()
        let pacer = RequestPacer(rate: { _ in 50 }, burst: 1, maxDelaySeconds: 10, now: clock.read)
        let key = RequestPacer.Key(bundleId: "b", operation: .transactionInfo)
        let other = RequestPacer.Key(bundleId: "b", operation: .orderLookup)
        #expect(pacer.reserve(key).milliseconds == 0)
        pacer.pause(key, seconds: 3)
        #expect(pacer.remainingPause(key) == 3)
        #expect(pacer.remainingPause(other) == 0)
        #expect(pacer.reserve(key).milliseconds == 3000)
        pacer.pause(key, seconds: 30)
        #expect(pacer.reserve(key).tooLong != nil)
        clock.advance(31)
        #expect(pacer.remainingPause(key) == 0)
    }

    @Test("requests whose timers fire late, together, are released spaced at the rate, and each release is recorded")
    func lateTimers() {
        let clock = TestClock()
        let pacer = RequestPacer(rate: { _ in 50 }, burst: 2, maxDelaySeconds: 10, now: clock.read)
        let key = RequestPacer.Key(bundleId: "b", operation: .transactionInfo)
        #expect((0..<5).map { _ in pacer.reserve(key).milliseconds } == [0, 0, 20, 40, 60])
        // Starved of CPU, the process gets to all five only half a second later: the burst goes, the rest waits.
        clock.advance(0.5)
        let first = clock.read()
        let waits = (0..<5).map { _ in pacer.release(key) }
        #expect(waits.prefix(2) == [0, 0])
        #expect(waits.dropFirst(2).allSatisfy { abs($0 - 0.02) < 1e-9 }, "\(waits)")
        clock.advance(0.021)
        let second = clock.read()
        #expect(pacer.release(key) == 0)
        #expect(pacer.release(key) > 0)
        #expect(pacer.releases(of: key) == [first, first, second])
        pacer.pause(key, seconds: 3)
        #expect(abs(pacer.release(key) - 3) < 1e-9, "a 429's pause holds releases too")
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let seconds = Mutex(100.0)
    var read: @Sendable () -> Double { { [self] in seconds.withLock { $0 } } }
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
}

extension RequestPacer.Decision {
    /// The delay of a `.send`, rounded to milliseconds; -1 for `.tooLong`.
    var milliseconds: Int {
        if case .send(let seconds) = self { return Int((seconds * 1000).rounded()) }
        return -1
    }

    var tooLong: Double? {
        if case .tooLong(let seconds) = self { return seconds }
        return nil
    }
}
