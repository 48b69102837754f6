/// Why the fake App Store could not start.
public struct FakeAppStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// A configuration value is out of range.
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

    public var description: String { "fake App Store: \(message)" }
}
