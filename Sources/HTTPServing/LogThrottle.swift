import NIOCore

/// Counts events (connections refused, accepts failed) and says when to log them: the first at once, then at most once
/// per `interval`, with the number since the last line. For one event loop's use.
struct LogThrottle {
    let interval: TimeAmount
    private var countSinceReport = 0
    private var lastReport: NIODeadline?

    init(interval: TimeAmount = .seconds(60)) {
        self.interval = interval
    }

    /// Counts one event; returns the number to log (this one included) when a line is due, else nil.
    mutating func count(now: NIODeadline = .now()) -> Int? {
        countSinceReport += 1
        if let lastReport, now - lastReport < interval { return nil }
        defer {
            countSinceReport = 0
            lastReport = now
        }
        return countSinceReport
    }
}
