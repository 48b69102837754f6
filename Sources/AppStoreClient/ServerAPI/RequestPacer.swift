import Dispatch
import Synchronization

/// Keeps App Store Server API requests under Apple's limits: one `TokenBucket` per (bundle id, operation,
/// environment), shared by every caller of a client. Apple counts production and the sandbox apart, and the sandbox's
/// limits are a tenth of production's, so each environment is paced at its own rate. The clock is injected (seconds,
/// monotonic) so tests need no sleeps.
///
/// Pacing holds twice. `reserve` gives each request its slot, and the request waits on a timer for it; `release`, at
/// the moment the request would be handed to the transport, lets it go only if the releases actually made (by the
/// clock, not by the slots) still keep to the rate and burst. Timers fire late when the process is starved of CPU,
/// and requests whose slots came while it was stalled would otherwise all go at once; `release` spaces them out.
/// So in any one second at most `rate + burst` requests are released, whatever the scheduling.
public final class RequestPacer: Sendable {
    public struct Key: Sendable, Hashable {
        public var bundleId: String
        public var operation: ServerAPIOperation
        public var environment: AppStoreEndpoint

        public init(bundleId: String, operation: ServerAPIOperation, environment: AppStoreEndpoint = .production) {
            self.bundleId = bundleId
            self.operation = operation
            self.environment = environment
        }
    }

    /// What to do with a request.
    public enum Decision: Sendable, Equatable {
        /// Send it after this many seconds (0: now).
        case send(afterSeconds: Double)
        /// Pacing would hold it this long, past the bound: do not send it (nothing was reserved).
        case tooLong(seconds: Double)
    }

    private let rate: @Sendable (Key) -> Double
    private let burst: Int
    private let maxDelaySeconds: Double
    private let now: @Sendable () -> Double
    private let buckets = Mutex<[Key: TokenBucket]>([:])
    /// Per key, the releases made: a bucket driven by the moments of release, and the last `keptReleases` of them.
    private let released = Mutex<[Key: (bucket: TokenBucket, times: [Double])]>([:])

    /// How many release times `releases(of:)` keeps per key.
    public static let keptReleases = 10_000

    /// The monotonic clock pacing uses unless a test gives another.
    public static let monotonicSeconds: @Sendable () -> Double = {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// - Parameter rate: requests per second for an operation in an environment.
    public init(
        rate: @escaping @Sendable (ServerAPIOperation, AppStoreEndpoint) -> Double,
        burst: Int,
        maxDelaySeconds: Double,
        now: @escaping @Sendable () -> Double = RequestPacer.monotonicSeconds
    ) {
        self.rate = { rate($0.operation, $0.environment) }
        self.burst = burst
        self.maxDelaySeconds = maxDelaySeconds
        self.now = now
    }

    /// A pacer whose rates do not depend on the environment (each environment still has buckets of its own).
    public convenience init(
        rate: @escaping @Sendable (ServerAPIOperation) -> Double,
        burst: Int,
        maxDelaySeconds: Double,
        now: @escaping @Sendable () -> Double = RequestPacer.monotonicSeconds
    ) {
        self.init(rate: { operation, _ in rate(operation) }, burst: burst, maxDelaySeconds: maxDelaySeconds, now: now)
    }

    /// Reserves the next slot for `key`, unless it lies more than `maxDelaySeconds` ahead.
    public func reserve(_ key: Key) -> Decision {
        let time = now()
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? TokenBucket(rate: rate(key), burst: burst)
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
            var bucket = buckets[key] ?? TokenBucket(rate: rate(key), burst: burst)
            bucket.pause(until: until)
            buckets[key] = bucket
        }
    }

    /// Hands a request of `key` whose slot has come over to be sent now (returns 0, and records the release), or says
    /// how many seconds more it must wait: while a 429's pause holds, or when releasing it now would break the rate and
    /// burst counted over the releases actually made (its timer fired late, together with others).
    public func release(_ key: Key) -> Double {
        let held = remainingPause(key)
        if held > 0 { return held }
        let time = now()
        return released.withLock { released in
            var entry = released[key] ?? (TokenBucket(rate: rate(key), burst: burst), [])
            let wait = entry.bucket.nextSendTime(now: time) - time
            guard wait <= 0 else { return wait }
            _ = entry.bucket.reserve(now: time)
            entry.times.append(time)
            if entry.times.count > Self.keptReleases { entry.times.removeFirst(Self.keptReleases / 10) }
            released[key] = entry
            return 0
        }
    }

    /// When `key`'s requests were released to be sent (the pacing clock's seconds, oldest first; the last
    /// `keptReleases`).
    public func releases(of key: Key) -> [Double] {
        released.withLock { $0[key]?.times ?? [] }
    }

    /// Seconds until `key` is no longer paused: a request whose slot came before a 429 arrived waits this much more.
    public func remainingPause(_ key: Key) -> Double {
        let time = now()
        return buckets.withLock { max(0, ($0[key]?.pausedUntilTime ?? -.infinity) - time) }
    }
}
