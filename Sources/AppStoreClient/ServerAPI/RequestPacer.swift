import Dispatch
import Synchronization

/// Keeps App Store Server API requests under Apple's limits: one `TokenBucket` per (bundle id, operation), shared by
/// every caller of a client. The clock is injected (seconds, monotonic) so tests need no sleeps.
public final class RequestPacer: Sendable {
    public struct Key: Sendable, Hashable {
        public var bundleId: String
        public var operation: ServerAPIOperation

        public init(bundleId: String, operation: ServerAPIOperation) {
            self.bundleId = bundleId
            self.operation = operation
        }
    }

    /// What to do with a request.
    public enum Decision: Sendable, Equatable {
        /// Send it after this many seconds (0: now).
        case send(afterSeconds: Double)
        /// Pacing would hold it this long, past the bound: do not send it (nothing was reserved).
        case tooLong(seconds: Double)
    }

    private let rate: @Sendable (ServerAPIOperation) -> Double
    private let burst: Int
    private let maxDelaySeconds: Double
    private let now: @Sendable () -> Double
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    /// The monotonic clock pacing uses unless a test gives another.
    public static let monotonicSeconds: @Sendable () -> Double = {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    public init(
        rate: @escaping @Sendable (ServerAPIOperation) -> Double,
        burst: Int,
        maxDelaySeconds: Double,
        now: @escaping @Sendable () -> Double = RequestPacer.monotonicSeconds
    ) {
        self.rate = rate
        self.burst = burst
        self.maxDelaySeconds = maxDelaySeconds
        self.now = now
    }

    /// Reserves the next slot for `key`, unless it lies more than `maxDelaySeconds` ahead.
    public func reserve(_ key: Key) -> Decision {
        let time = now()
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? TokenBucket(rate: rate(key.operation), burst: burst)
            let wait = bucket.nextSendTime(now: time) - time
            guard wait <= maxDelaySeconds else { return .tooLong(seconds: wait) }
            let sendAt = bucket.reserve(now: time)
            buckets[key] = bucket
            return .send(afterSeconds: max(0, sendAt - time))
        }
    }

    /// Holds `key`'s requests for `seconds` from now (Apple answered 429 with this Retry-After).
    public func pause(_ key: Key, seconds: Double) {
        let until = now() + seconds
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? TokenBucket(rate: rate(key.operation), burst: burst)
            bucket.pause(until: until)
            buckets[key] = bucket
        }
    }

    /// Seconds until `key` is no longer paused: a request whose slot came before a 429 arrived waits this much more.
    public func remainingPause(_ key: Key) -> Double {
        let time = now()
        return buckets.withLock { max(0, ($0[key]?.pausedUntilTime ?? -.infinity) - time) }
    }
}
