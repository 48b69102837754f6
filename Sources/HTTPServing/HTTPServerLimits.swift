import NIOCore

/// How long a connection may take over each part of a request, and how many may be open at once, so that clients
/// that connect and then send slowly or nothing (slowloris) cannot hold the server's connections and descriptors.
/// A connection past a timeout is closed without an answer.
public struct HTTPServerLimits: Sendable, Equatable {
    /// The whole request head (request line and headers) must arrive within this long of the connection's start, or,
    /// on a kept-alive connection, of the next request's first bytes: not per read, so a head sent a byte at a time
    /// is cut off too.
    public var headerTimeout: Duration
    /// The request body must arrive, whole, within this long of its head.
    public var bodyTimeout: Duration
    /// A kept-alive connection whose last answer was sent and on which no next request has started is closed after
    /// this long.
    public var idleTimeout: Duration
    /// Connections open at once, at most: one accepted beyond it is closed at once (and a warning logged, at most
    /// once a minute). Keep it below the open-files limit, so accepting never fails for want of a descriptor.
    public var maxConnections: Int

    public init(
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60),
        maxConnections: Int = 512
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }

    /// The longest timeout taken: a day (longer ones would let a connection be held as good as for ever).
    public static let longestTimeout = Duration.seconds(86_400)

    /// The timeouts as NIO's, checked: each above zero and at most ``longestTimeout``; `maxConnections` at least 1.
    func checked(settings: String) throws(HTTPServerError) -> (header: TimeAmount, body: TimeAmount, idle: TimeAmount) {
        guard maxConnections >= 1 else {
            throw HTTPServerError(
                .invalidConfiguration, "the connection cap of \(settings) must be at least 1, got \(maxConnections)"
            )
        }
        func amount(_ duration: Duration, _ name: String) throws(HTTPServerError) -> TimeAmount {
            guard duration > .zero, duration <= Self.longestTimeout else {
                throw HTTPServerError(
                    .invalidConfiguration,
                    "the \(name) timeout of \(settings) must be above 0 and at most a day, got \(duration)"
                )
            }
            // At most a day: 86,400 × 10⁹ ns fits in Int64 many times over.
            let (seconds, attoseconds) = duration.components
            return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        return (
            try amount(headerTimeout, "header"), try amount(bodyTimeout, "body"), try amount(idleTimeout, "idle")
        )
    }
}
