/// A replay that stopped before its end; `summary` says what it did until then.
public struct NotificationReplayError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The App Store Server API could not be read (configuration, not found, still failing after retries).
        case appStore
        /// Storing a notification failed (the database).
        case store
    }

    public var code: Code
    public var message: String
    public var summary: NotificationReplay.Summary

    public init(_ code: Code, _ message: String, summary: NotificationReplay.Summary) {
        self.code = code
        self.message = message
        self.summary = summary
    }

    public var description: String { message }
}
