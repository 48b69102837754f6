/// What the fake App Store has answered since it started or since the last reset. Served as JSON at `GET /stats`.
public struct FakeAppStoreStats: Codable, Sendable, Equatable {
    /// Answered verifyReceipt requests per endpoint: "production", "sandbox".
    public var requests: [String: Int]
    /// Per endpoint, the count of each answer: a status ("0", "21007") or a fault name ("html503", "reset", …).
    public var statuses: [String: [String: Int]]
    /// All answered verifyReceipt requests.
    public var total: Int
    /// When the first and the last verifyReceipt request arrived, in milliseconds since 1970 (nil before one has):
    /// how long a burst of calls took to reach Apple's stand-in.
    public var firstRequestAtMs: Int64?
    public var lastRequestAtMs: Int64?
    /// Answers held back for a latency (verifyReceipt and the Server API), and how late they went out after the
    /// moment they were due: in all, at most, and how many more than `lateThresholdMilliseconds`. Late answers mean
    /// the fake itself was short of CPU, so that the client waited for Apple's stand-in, not for Apple's latency.
    public var delayedAnswers: Int
    public var lateMillisecondsTotal: Double
    public var lateMillisecondsMax: Double
    public var lateAnswers: Int

    /// An answer this much later than due counts in `lateAnswers`.
    public static let lateThresholdMilliseconds = 10.0

    public init(
        requests: [String: Int] = [:], statuses: [String: [String: Int]] = [:], total: Int = 0,
        firstRequestAtMs: Int64? = nil, lastRequestAtMs: Int64? = nil, delayedAnswers: Int = 0,
        lateMillisecondsTotal: Double = 0, lateMillisecondsMax: Double = 0, lateAnswers: Int = 0
    ) {
        self.requests = requests
        self.statuses = statuses
        self.total = total
        self.firstRequestAtMs = firstRequestAtMs
        self.lastRequestAtMs = lastRequestAtMs
        self.delayedAnswers = delayedAnswers
        self.lateMillisecondsTotal = lateMillisecondsTotal
        self.lateMillisecondsMax = lateMillisecondsMax
        self.lateAnswers = lateAnswers
    }

    /// Seconds from the first verifyReceipt request's arrival to the last one's; nil before any.
    public var requestArrivalSpanSeconds: Double? {
        guard let first = firstRequestAtMs, let last = lastRequestAtMs else { return nil }
        // In Double: decoded from JSON, the two need not be a span Int64 can hold.
        return (Double(last) - Double(first)) / 1_000
    }

    /// How late a delayed answer went out on average, in milliseconds; nil before any.
    public var lateMillisecondsMean: Double? {
        delayedAnswers > 0 ? lateMillisecondsTotal / Double(delayedAnswers) : nil
    }

    /// The count of one answer at one endpoint, 0 when it never happened.
    public func count(_ endpoint: String, _ statusOrFault: String) -> Int {
        statuses[endpoint]?[statusOrFault] ?? 0
    }

    mutating func record(endpoint: String, answer: String, arrivedAtMs: Int64) {
        requests[endpoint, default: 0] += 1
        statuses[endpoint, default: [:]][answer, default: 0] += 1
        total += 1
        firstRequestAtMs = min(firstRequestAtMs ?? arrivedAtMs, arrivedAtMs)
        lastRequestAtMs = max(lastRequestAtMs ?? arrivedAtMs, arrivedAtMs)
    }

    /// One delayed answer sent `lateMilliseconds` after it was due (0 or less: on time).
    mutating func recordDelayedAnswer(lateMilliseconds: Double) {
        let late = max(0, lateMilliseconds)
        delayedAnswers += 1
        lateMillisecondsTotal += late
        lateMillisecondsMax = max(lateMillisecondsMax, late)
        if late > Self.lateThresholdMilliseconds { lateAnswers += 1 }
    }
}
