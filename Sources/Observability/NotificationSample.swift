/// What one poll of the database says of App Store Server Notifications (`OperationsDatabase.notificationSample`).
public struct NotificationSample: Sendable, Hashable {
    /// The values of `receipt_notifications.source`: the HTTP receiver, a replay from Notification History, a call
    /// of receive_notification() from SQL.
    public static let sources = ["receiver", "history", "sql"]

    /// Notifications received since the previous sample, by source.
    public var received: [String: Int]
    /// Notifications not finished: queued, waiting for a retry, or running.
    public var waiting: Int
    /// Seconds since the oldest waiting one was received; 0 when none waits.
    public var oldestWaitingAgeSeconds: Double

    public init(received: [String: Int], waiting: Int, oldestWaitingAgeSeconds: Double) {
        self.received = received
        self.waiting = waiting
        self.oldestWaitingAgeSeconds = oldestWaitingAgeSeconds
    }
}
