/// Paces requests to `rate` a second with bursts of up to `burst`, by reservation: every request is given the
/// moment it may be sent, so requests that arrive together are spread out rather than refused (the generic cell
/// rate algorithm, in its virtual scheduling form: a bucket of `burst` tokens refilled at `rate`). Time is whatever
/// the caller passes, in seconds: no clock inside, so tests drive it.
public struct TokenBucket: Sendable {
    public let rate: Double
    public let burst: Int
    /// When the next request would be due if requests were spaced exactly `1 / rate` apart.
    private var theoreticalArrival: Double
    /// Nothing is sent before this (Apple's Retry-After).
    private var pausedUntil: Double

    public init(rate: Double, burst: Int = 1) {
        self.rate = rate
        self.burst = max(1, burst)
        theoreticalArrival = -.infinity
        pausedUntil = -.infinity
    }

    private var interval: Double { 1 / rate }
    /// How far ahead of its theoretical time a request may go: what makes room for the burst.
    private var tolerance: Double { Double(burst - 1) * interval }

    /// Reserves a slot for one request made at `now` and returns when it may be sent (`now` or later).
    public mutating func reserve(now: Double) -> Double {
        let sendAt = max(now, pausedUntil, theoreticalArrival - tolerance)
        theoreticalArrival = max(theoreticalArrival, sendAt) + interval
        return sendAt
    }

    /// When a request made at `now` would be sent, without reserving anything.
    public func nextSendTime(now: Double) -> Double {
        max(now, pausedUntil, theoreticalArrival - tolerance)
    }

    /// Holds every request until `time` (a 429's Retry-After); an earlier time than a pause in force changes nothing.
    public mutating func pause(until time: Double) {
        pausedUntil = max(pausedUntil, time)
    }

    /// Until when requests are held by `pause`.
    public var pausedUntilTime: Double { pausedUntil }
}
