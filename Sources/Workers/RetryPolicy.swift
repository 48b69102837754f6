import Foundation

/// When to try again after Apple gave no verdict, and when to give up.
public struct RetryPolicy: Sendable, Hashable {
    /// The first delay (`RETRY_BASE_SECONDS`); it doubles with each attempt.
    public var baseSeconds: Double
    /// The longest delay (`RETRY_MAX_SECONDS`).
    public var maxSeconds: Double
    /// Attempts before a job goes to the dead letters (`MAX_ATTEMPTS`), for jobs without their own max_attempts.
    public var maxAttempts: Int
    /// 21002 ("malformed, or a temporary issue") is retried until this attempt, then rejected `invalid_receipt`.
    public var malformedDataAttempts: Int

    /// The defaults: 30 s doubling to 1 h, 80 attempts — about three days of trying.
    public init(baseSeconds: Double = 30, maxSeconds: Double = 3600, maxAttempts: Int = 80, malformedDataAttempts: Int = 3) {
        self.baseSeconds = baseSeconds
        self.maxSeconds = maxSeconds
        self.maxAttempts = maxAttempts
        self.malformedDataAttempts = malformedDataAttempts
    }

    /// The delay after `attempt` (counting from 1) failed: exponential, capped, with "equal jitter" (half fixed,
    /// half random) so that jobs failed together by an outage do not come back together. A server's Retry-After
    /// is honoured when longer. `random` is in 0..<1.
    public func delay(afterAttempt attempt: Int, retryAfterSeconds: Double? = nil, random: Double) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 40)))
        let ceiling = min(maxSeconds, baseSeconds * pow(2, exponent))
        let jittered = ceiling / 2 + ceiling / 2 * min(max(random, 0), 1)
        guard let retryAfterSeconds, retryAfterSeconds.isFinite else { return jittered }
        return max(jittered, min(retryAfterSeconds, 86_400))
    }

    /// The total time a job keeps being retried before it is dead (without jitter's random half: the upper bound).
    public var retryWindowSeconds: Double {
        (1..<max(maxAttempts, 1)).reduce(0) { $0 + min(maxSeconds, baseSeconds * pow(2, Double(min($1 - 1, 40)))) }
    }

    public func validate() throws(WorkerConfigurationError) {
        guard baseSeconds >= 0 else {
            throw WorkerConfigurationError(
                .outOfRange, setting: "RETRY_BASE_SECONDS",
                "RETRY_BASE_SECONDS must be ≥ 0 and RETRY_MAX_SECONDS ≥ RETRY_BASE_SECONDS"
            )
        }
        guard maxSeconds >= baseSeconds else {
            throw WorkerConfigurationError(
                .outOfRange, setting: "RETRY_MAX_SECONDS",
                "RETRY_BASE_SECONDS must be ≥ 0 and RETRY_MAX_SECONDS ≥ RETRY_BASE_SECONDS"
            )
        }
        guard maxAttempts >= 1 else {
            throw WorkerConfigurationError(.outOfRange, setting: "MAX_ATTEMPTS", "MAX_ATTEMPTS must be at least 1")
        }
    }
}
