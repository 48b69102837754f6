import Foundation

/// One interval (a minute by default) of `bench --soak`: what finished in it, and what it cost.
public struct SoakMinute: Sendable, Codable, Equatable {
    /// 1, 2, …
    public var index: Int
    /// Its length (the last one may be shorter).
    public var seconds: Double
    /// Receipts enqueued in it.
    public var enqueued: Int
    /// Receipt jobs that reached a verdict (verified, rejected or dead) in it.
    public var finished: Int
    /// Retry outcomes written in it (Apple gave no verdict: a 5xx, a timeout, 21005…).
    public var retries: Int
    /// Jobs that went dead in it.
    public var dead: Int
    /// This process's resident set at its end, in MiB.
    public var rssMebibytes: Double
    /// CPU of this process (the worker, and the fake App Store, the enqueuer and the sender with it) and of
    /// PostgreSQL in it, per item finished (receipt verdicts and notifications final).
    public var workerCPUMicrosecondsPerJob: Double?
    public var postgresCPUMicrosecondsPerJob: Double?
    /// Enqueue (the enqueue statement sent) → verdict written, of the jobs that reached a verdict in it.
    public var enqueueToVerdictP50Milliseconds: Double?
    public var enqueueToVerdictP99Milliseconds: Double?
    /// Notifications stored (receive_notification() returned) in it.
    public var notificationsSent: Int
    /// Notifications seen final in it, and of those applied.
    public var notificationsFinal: Int
    public var notificationsApplied: Int
    /// Arrival (stored, committed) → seen final, of the notifications seen final in it.
    public var arrivalToAppliedP99Milliseconds: Double?

    /// The per-item CPU figure: `seconds` of CPU over `items`, in µs; nil without items or without a reading.
    static func perItem(_ seconds: Double?, items: Int) -> Double? {
        guard let seconds, items > 0 else { return nil }
        return seconds / Double(items) * 1e6
    }

    static let header = " min      s  enq.  final  RSS MiB  worker µs/job  PG µs/job  verdict p50/p99 ms  "
        + "notif. applied  p99 ms  retries  dead"

    /// The line printed as the interval ends and kept for the table.
    var line: String {
        func figure(_ value: Double?, _ format: String) -> String { value.map { String(format: format, $0) } ?? "–" }
        let verdict = figure(enqueueToVerdictP50Milliseconds, "%.0f") + "/"
            + figure(enqueueToVerdictP99Milliseconds, "%.0f")
        return String(format: "%4d %6.1f %5d %6d %8.1f ", index, seconds, enqueued, finished, rssMebibytes)
            + figure(workerCPUMicrosecondsPerJob, "%.0f").leftPadded(14) + " "
            + figure(postgresCPUMicrosecondsPerJob, "%.0f").leftPadded(10) + " "
            + verdict.leftPadded(19) + " "
            + "\(notificationsApplied)/\(notificationsFinal)".leftPadded(15) + " "
            + figure(arrivalToAppliedP99Milliseconds, "%.0f").leftPadded(7) + " "
            + String(retries).leftPadded(8) + " " + String(dead).leftPadded(5)
    }
}

extension String {
    /// Padded with spaces on the left to `width` characters.
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
