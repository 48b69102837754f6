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
    /// verifyReceipt requests by the 10 ms in which they arrived (milliseconds since 1970 / 10): how a burst was
    /// spread between its first and last request. In JSON a flat list of pairs: slot, count, slot, count, …. At most
    /// `maxArrivalSlots` slots; a request arriving in a new slot past them counts in `requestsPastArrivalSlots`
    /// instead, and the spread is then unknown.
    public var requestsByArrival: [Int64: Int]
    public var requestsPastArrivalSlots: Int
    /// Answers held back for a latency (verifyReceipt and the Server API), and how late they went out after the
    /// moment they were due: in all, at most, and how many more than `lateThresholdMilliseconds`. Late answers mean
    /// the fake itself was short of CPU, so that the client waited for Apple's stand-in, not for Apple's latency.
    public var delayedAnswers: Int
    public var lateMillisecondsTotal: Double
    public var lateMillisecondsMax: Double
    public var lateAnswers: Int

    /// Ten minutes of requests arriving without a pause, about 2 MB: a fake App Store left running keeps no more.
    public static let maxArrivalSlots = 60_000

    /// An answer this much later than due counts in `lateAnswers`.
    public static let lateThresholdMilliseconds = 10.0

    public init(
        requests: [String: Int] = [:], statuses: [String: [String: Int]] = [:], total: Int = 0,
        firstRequestAtMs: Int64? = nil, lastRequestAtMs: Int64? = nil, requestsByArrival: [Int64: Int] = [:],
        requestsPastArrivalSlots: Int = 0, delayedAnswers: Int = 0,
        lateMillisecondsTotal: Double = 0, lateMillisecondsMax: Double = 0, lateAnswers: Int = 0
    ) {
        self.requests = requests
        self.statuses = statuses
        self.total = total
        self.firstRequestAtMs = firstRequestAtMs
        self.lastRequestAtMs = lastRequestAtMs
        self.requestsByArrival = requestsByArrival
        self.requestsPastArrivalSlots = requestsPastArrivalSlots
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

    /// Seconds from the first verifyReceipt request's arrival until `fraction` of them had arrived, to the 10 ms;
    /// nil before any, and when some arrived past `maxArrivalSlots`.
    public func requestArrivalSeconds(untilFraction fraction: Double) -> Double? {
        guard requestsPastArrivalSlots == 0, let first = requestsByArrival.keys.min() else { return nil }
        // In Double: decoded from JSON, the counts need not have a sum Int can hold.
        let total = requestsByArrival.values.reduce(0.0) { $0 + Double($1) }
        let wanted = (total * min(max(fraction, 0), 1)).rounded(.up)
        var seen = 0.0
        for slot in requestsByArrival.keys.sorted() {
            seen += Double(requestsByArrival[slot] ?? 0)
            // To the slot, but never past the span itself (measured to the millisecond).
            guard seen < wanted else {
                return min((Double(slot) - Double(first)) / 100, requestArrivalSpanSeconds ?? .infinity)
            }
        }
        return nil
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
        let slot = arrivedAtMs / 10
        if let count = requestsByArrival[slot] {
            requestsByArrival[slot] = count + 1
        } else if requestsByArrival.count < Self.maxArrivalSlots {
            requestsByArrival[slot] = 1
        } else {
            requestsPastArrivalSlots += 1
        }
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
