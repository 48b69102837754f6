/// What the fake's App Store Server API answered since it started or since the last reset. Served as JSON at
/// `GET /fake/api-stats`.
public struct ServerAPIStats: Codable, Sendable, Equatable {
    /// Requests per "environment.operation" ("production.transaction_info", "sandbox.order_lookup", …; operations
    /// transaction_info, transaction_history, order_lookup, notification_history).
    public var requests: [String: Int]
    /// Per "environment.operation", the count of each answer: the HTTP status ("200", "401", "429") or Apple's error
    /// code ("4040010", "5000001"), or a fault's name ("html503", "truncated").
    public var answers: [String: [String: Int]]
    /// Per operation, the arrival of each request in seconds since the server started (the last 10,000).
    public var arrivals: [String: [Double]]

    public init(
        requests: [String: Int] = [:], answers: [String: [String: Int]] = [:], arrivals: [String: [Double]] = [:]
    ) {
        self.requests = requests
        self.answers = answers
        self.arrivals = arrivals
    }

    static let keptArrivals = 10_000

    /// The count of one answer for "environment.operation", 0 when it never happened.
    public func count(_ key: String, _ answer: String) -> Int {
        answers[key]?[answer] ?? 0
    }

    /// The most requests of `operation` that arrived within any one second.
    public func maxPerSecond(_ operation: String) -> Int {
        let times = arrivals[operation] ?? []
        var most = 0
        var start = 0
        for (end, time) in times.enumerated() {
            while time - times[start] >= 1 { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    mutating func record(environment: String, operation: String, answer: String, arrival: Double) {
        let key = "\(environment.lowercased()).\(operation)"
        requests[key, default: 0] += 1
        answers[key, default: [:]][answer, default: 0] += 1
        arrivals[operation, default: []].append(arrival)
        if arrivals[operation, default: []].count > Self.keptArrivals {
            arrivals[operation]?.removeFirst(Self.keptArrivals / 10)
        }
    }
}
