/// What the fake App Store has answered since it started or since the last reset. Served as JSON at `GET /stats`.
public struct FakeAppStoreStats: Codable, Sendable, Equatable {
    /// Answered verifyReceipt requests per endpoint: "production", "sandbox".
    public var requests: [String: Int]
    /// Per endpoint, the count of each answer: a status ("0", "21007") or a fault name ("html503", "reset", …).
    public var statuses: [String: [String: Int]]
    /// All answered verifyReceipt requests.
    public var total: Int

    public init(requests: [String: Int] = [:], statuses: [String: [String: Int]] = [:], total: Int = 0) {
        self.requests = requests
        self.statuses = statuses
        self.total = total
    }

    /// The count of one answer at one endpoint, 0 when it never happened.
    public func count(_ endpoint: String, _ statusOrFault: String) -> Int {
        statuses[endpoint]?[statusOrFault] ?? 0
    }

    mutating func record(endpoint: String, answer: String) {
        requests[endpoint, default: 0] += 1
        statuses[endpoint, default: [:]][answer, default: 0] += 1
        total += 1
    }
}
