/// A worker setting that cannot work, naming the setting to fix.
public struct WorkerConfigurationError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// A value outside what the setting allows.
        case outOfRange
        /// A setting that must be given is empty.
        case missing
    }

    public var code: Code
    /// The environment variable to fix, e.g. `MAX_ATTEMPTS`.
    public var setting: String
    public var message: String

    public init(_ code: Code, setting: String, _ message: String) {
        self.code = code
        self.setting = setting
        self.message = message
    }

    public var description: String { message }
}
