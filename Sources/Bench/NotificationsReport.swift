import Foundation

/// The figures of `bench --notifications N`, as printed in the table and in the JSON line.
public struct NotificationsReport: Sendable, Codable {
    public var notifications: Int
    /// DID_RENEW, TEST or ONE_TIME_CHARGE.
    public var type: String
    public var via: NotificationsRun.Path
    /// `--rate`: arrivals a second asked for, and as sent.
    public var rate: Double?
    public var achievedRate: Double?
    /// Threads verifying notifications (NOTIFICATION_THREADS).
    public var notificationThreads: Int
    /// WRITE_CONNECTIONS: the notifications loop's connection and the overflow writers.
    public var writeConnections: Int
    public var cores: Int
    public var database: String
    /// Without `--rate`: storing all of them, before the worker started.
    public var intakeSeconds: Double?
    public var intakePerSecond: Double?
    /// The worker's start → the last one seen applied.
    public var drainSeconds: Double
    /// Applied over `drainSeconds`. The headline figure without `--rate`.
    public var appliedPerSecond: Double
    public var applied: Int
    /// Renewals credited to the ledger (one per notification).
    public var credited: Int
    /// Claimed more than once (a lease that ran out, a batch written again).
    public var claimedAgain: Int
    /// With `--rate`: acknowledged stored → first seen applied (polled every 5 ms). The headline figure with `--rate`.
    var arrivalToApplied: LatencySummary?
    /// finished_at − received_at as the database recorded them (its transactions' start times).
    public var databaseP50Milliseconds: Double?
    public var databaseP99Milliseconds: Double?
    /// CPU of this process (worker, and the sender, the receiver and the sampler with them) and of PostgreSQL,
    /// from the worker's start to the last one applied, per notification.
    public var workerCPUMicrosecondsPerNotification: Double
    public var postgresCPUMicrosecondsPerNotification: Double?

    /// What the notifications were, for the report.
    var description: String {
        switch type {
        case "TEST": "TEST"
        case "ONE_TIME_CHARGE": "ONE_TIME_CHARGE (a consumable no job names, with its customer's registered token)"
        default: "DID_RENEW (transaction and renewal info signed inside)"
        }
    }

    public func table() -> String {
        var rows: [(String, String)] = [
            ("notifications", "\(notifications) \(description), signed by the fake App Store's chain, through "
                + (via == .sql ? "receive_notification()" : "the HTTP receiver")),
            ("worker", "\(notificationThreads) notification thread(s), \(writeConnections) write connection(s); "
                + "\(cores) cores, shared with PostgreSQL"),
            ("database", database),
        ]
        if let intakeSeconds, let intakePerSecond {
            rows.append(("intake", String(format: "%.2f s (%.0f /s), before the worker started", intakeSeconds, intakePerSecond)))
        }
        if let rate {
            rows.append(("arrivals", String(format: "%.0f /s asked, %.0f /s sent, the worker running", rate, achievedRate ?? 0)))
        }
        rows.append(("applied", String(
            format: "%d (credited %d, claimed more than once %d) in %.2f s from the worker's start: %.0f /s",
            applied, credited, claimedAgain, drainSeconds, appliedPerSecond
        )))
        if let arrivalToApplied {
            rows.append(("arrival → applied", arrivalToApplied.text + " (stored → seen applied)"))
        }
        if let databaseP50Milliseconds, let databaseP99Milliseconds {
            rows.append(("received_at → finished_at", String(
                format: "p50 %.1f ms, p99 %.1f ms (the database's clock)", databaseP50Milliseconds, databaseP99Milliseconds
            )))
        }
        rows.append(("CPU per notification", String(
            format: "this process %.0f µs, PostgreSQL %@", workerCPUMicrosecondsPerNotification,
            postgresCPUMicrosecondsPerNotification.map { String(format: "%.0f µs", $0) } ?? "not measured"
        )))
        return BenchTable.render(rows)
    }

    public func json() -> String { BenchTable.json(self) }
}
