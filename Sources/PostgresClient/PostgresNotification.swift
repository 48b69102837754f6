/// A message sent with `NOTIFY` (or `pg_notify`) on a channel this connection listens to.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel name as the server reports it (unquoted).
    public var channel: String
    /// The payload; empty when none was given.
    public var payload: String
    /// The process ID of the server backend that sent the notification.
    public var processID: Int32

    public init(channel: String, payload: String, processID: Int32) {
        self.channel = channel
        self.payload = payload
        self.processID = processID
    }
}
