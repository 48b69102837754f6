/// What the fake's App Store Server API answers instead of the normal answer: queued for the next requests
/// (`FakeAppStoreServer.injectAPIFaults`, `POST /fake/api-faults`) or drawn at random (`ServerAPIFaultRates`).
public enum ServerAPIFault: Sendable, Hashable {
    /// HTTP 429, errorCode 4290000, `Retry-After` this long from now, written as Apple does: epoch milliseconds.
    case rateLimited(retryAfterMilliseconds: Int)
    /// HTTP 500, errorCode 5000001 ("try again").
    case internalRetryable
    /// HTTP 503 with a load balancer's HTML page.
    case html503
    /// HTTP 200 whose body (and Content-Length) is the first half of the normal JSON, then the connection closes.
    case truncated
    /// The normal answer, this much later.
    case slow(milliseconds: Int)

    /// Reads a fault's name: `429` (Retry-After 1 s), `429:MS`, `5000001`, `html503`, `truncated`, `slow:MS`.
    public init?(name: String) {
        let parts = name.split(separator: ":", maxSplits: 1).map(String.init)
        let milliseconds = parts.count == 2 ? Int(parts[1]).flatMap { $0 >= 0 ? $0 : nil } : nil
        switch (parts.first, parts.count) {
        case ("429", 1): self = .rateLimited(retryAfterMilliseconds: 1_000)
        case ("429", 2): guard let milliseconds else { return nil }
            self = .rateLimited(retryAfterMilliseconds: milliseconds)
        case ("5000001", 1): self = .internalRetryable
        case ("html503", 1): self = .html503
        case ("truncated", 1): self = .truncated
        case ("slow", 2): guard let milliseconds else { return nil }
            self = .slow(milliseconds: milliseconds)
        default: return nil
        }
    }

    /// The name statistics count it under, and `init(name:)` reads.
    public var name: String {
        switch self {
        case .rateLimited(let milliseconds): "429:\(milliseconds)"
        case .internalRetryable: "5000001"
        case .html503: "html503"
        case .truncated: "truncated"
        case .slow(let milliseconds): "slow:\(milliseconds)"
        }
    }
}

/// Per-request probabilities (0…1) of random App Store Server API faults, drawn in declaration order against one
/// uniform draw (together at most 1), for requests no queued fault applies to.
public struct ServerAPIFaultRates: Sendable, Equatable {
    /// 429 with a Retry-After of `retryAfterMilliseconds`.
    public var rateLimited: Double
    /// 500 with 5000001.
    public var internalRetryable: Double
    /// 503 with an HTML page.
    public var html503: Double
    /// Half the JSON, then the connection closes.
    public var truncated: Double
    /// The normal answer `slowMilliseconds` late.
    public var slow: Double
    public var retryAfterMilliseconds: Int
    public var slowMilliseconds: Int

    public static let none = ServerAPIFaultRates()

    public init(
        rateLimited: Double = 0,
        internalRetryable: Double = 0,
        html503: Double = 0,
        truncated: Double = 0,
        slow: Double = 0,
        retryAfterMilliseconds: Int = 1_000,
        slowMilliseconds: Int = 2_000
    ) {
        self.rateLimited = rateLimited
        self.internalRetryable = internalRetryable
        self.html503 = html503
        self.truncated = truncated
        self.slow = slow
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.slowMilliseconds = slowMilliseconds
    }

    func draw<Generator: RandomNumberGenerator>(using generator: inout Generator) -> ServerAPIFault? {
        guard self != .none else { return nil }
        let table: [(rate: Double, fault: ServerAPIFault)] = [
            (rateLimited, .rateLimited(retryAfterMilliseconds: retryAfterMilliseconds)),
            (internalRetryable, .internalRetryable), (html503, .html503), (truncated, .truncated),
            (slow, .slow(milliseconds: slowMilliseconds)),
        ]
        return drawFault(table, using: &generator)
    }
}
