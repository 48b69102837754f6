/// The receiver could not start; the message names the setting to fix.
public struct NotificationReceiverError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// A setting is outside what it allows (the port, the body limit, a count).
        case invalidConfiguration
        /// The address could not be bound (in use, not local, …).
        case bindFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
