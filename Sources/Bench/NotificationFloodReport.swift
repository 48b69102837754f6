import Foundation

/// The figures of `bench --notification-flood N`, as printed in the table and in the JSON line.
public struct NotificationFloodReport: Sendable, Codable {
    public var forgeries: Int
    /// Threads verifying a claimed batch of notifications (NOTIFICATION_THREADS).
    public var notificationThreads: Int
    /// WRITE_CONNECTIONS: the notifications loop's connection and the overflow writers.
    public var writeConnections: Int
    public var cores: Int
    public var database: String
    /// The forgeries taken in through `receive_notification()`, the worker already running.
    public var intakeSeconds: Double
    /// The worker's start → the genuine REFUND seen applied (polled every 5 ms). The headline figure.
    public var genuineSeconds: Double
    public var forgeriesRejected: Int
    public var forgeriesUnfinished: Int
    /// Forgeries claimed more than once (a lease that ran out while the notification was in hand).
    public var claimedAgain: Int
    /// The worker's start → every forgery final (polled every 10 ms).
    public var floodSeconds: Double

    public func table() -> String {
        let rows: [(String, String)] = [
            ("flood", "\(forgeries) forged REFUNDs (test chain in x5c, random signature), then 1 genuine REFUND, "
                + "through receive_notification()"),
            ("worker", "\(notificationThreads) notification thread(s), \(writeConnections) write connection(s); "
                + "\(cores) cores, shared with PostgreSQL"),
            ("database", database),
            ("intake of the flood", String(format: "%.2f s, before the worker started", intakeSeconds)),
            ("genuine REFUND", String(format: "applied %.2f s after the worker started", genuineSeconds)),
            ("forgeries", String(
                format: "rejected invalid_signature %d, not final %d, claimed more than once %d; all final %.2f s "
                    + "after the worker started (%.0f /s)",
                forgeriesRejected, forgeriesUnfinished, claimedAgain, floodSeconds,
                Double(forgeriesRejected) / max(floodSeconds, 1e-9)
            )),
        ]
        return BenchTable.render(rows)
    }

    public func json() -> String { BenchTable.json(self) }
}
