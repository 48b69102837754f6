/// The metrics server could not start; the message names the setting to fix.
public struct MetricsServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The port is outside 0…65535.
        case invalidPort
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
