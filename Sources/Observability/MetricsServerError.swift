/// The metrics server could not start; the message names the setting to fix.
public struct MetricsServerError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
