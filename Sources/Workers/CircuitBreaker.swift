import Foundation
import Synchronization

/// Slows claiming when most recent Apple calls fail, so an outage does not burn every job's attempts; when
/// Apple answers again, lets the backlog drain at a rate that starts low and doubles, instead of all at once.
/// Time is passed in (seconds on any monotonic clock), so the logic is tested without waiting.
public final class CircuitBreaker: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// How many recent outcomes are judged.
        public var window: Int = 40
        /// No judgement before this many outcomes.
        public var minimumSamples: Int = 20
        /// Open when at least this share of the window failed.
        public var failureRatio: Double = 0.5
        /// While open, one job is let through this often to probe Apple.
        public var probeIntervalSeconds: Double = 5
        /// After a successful probe, claims per second start here…
        public var recoveryStartRate: Double = 20
        /// …and double this often…
        public var recoveryDoublingSeconds: Double = 5
        /// …until they reach this rate, when the breaker closes.
        public var recoveryFullRate: Double = 5_000

        public init() {}
    }

    public enum State: String, Sendable { case closed, open, recovering }

    private struct Inner {
        var state: State = .closed
        var outcomes: [Bool] = []      // true = Apple gave an answer
        var next = 0
        var lastProbe = -Double.infinity
        var recoveryStarted = 0.0
        var tokens = 0.0
        var lastRefill = 0.0
    }

    public let configuration: Configuration
    private let inner = Mutex(Inner())

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    public var state: State { inner.withLock { $0.state } }

    /// Records one call's outcome: `answered` is false for timeouts, connection errors, HTTP 5xx/429 and
    /// Apple's "try again" statuses.
    public func record(answered: Bool, now: Double) {
        inner.withLock { inner in
            if inner.outcomes.count < configuration.window {
                inner.outcomes.append(answered)
            } else {
                inner.outcomes[inner.next] = answered
                inner.next = (inner.next + 1) % configuration.window
            }
            switch inner.state {
            case .closed, .recovering:
                let failures = inner.outcomes.lazy.filter { !$0 }.count
                if inner.outcomes.count >= configuration.minimumSamples,
                    Double(failures) >= configuration.failureRatio * Double(inner.outcomes.count)
                {
                    inner.state = .open
                    inner.lastProbe = now
                }
            case .open:
                if answered {
                    inner.state = .recovering
                    inner.recoveryStarted = now
                    inner.lastRefill = now
                    inner.tokens = 1
                    inner.outcomes.removeAll(keepingCapacity: true)
                    inner.next = 0
                }
            }
        }
    }

    /// How many of `wanted` jobs may be claimed now.
    public func allowance(wanted: Int, now: Double) -> Int {
        inner.withLock { inner in
            switch inner.state {
            case .closed:
                return wanted
            case .open:
                guard now - inner.lastProbe >= configuration.probeIntervalSeconds, wanted > 0 else { return 0 }
                inner.lastProbe = now
                return 1
            case .recovering:
                let elapsed = max(0, now - inner.recoveryStarted)
                let doublings = min(elapsed / configuration.recoveryDoublingSeconds, 30)
                let rate = configuration.recoveryStartRate * Foundation.exp2(doublings)
                if rate >= configuration.recoveryFullRate {
                    inner.state = .closed
                    return wanted
                }
                inner.tokens = min(rate, inner.tokens + rate * max(0, now - inner.lastRefill))
                inner.lastRefill = now
                let granted = min(wanted, Int(inner.tokens))
                inner.tokens -= Double(granted)
                return granted
            }
        }
    }
}
