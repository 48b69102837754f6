/// A thread that could not be started: the call that failed and the error number it returned.
public struct ThreadError: Error, CustomStringConvertible, Sendable {
    /// The failed call, e.g. `pthread_create`.
    public var operation: String
    /// The errno value it returned.
    public var code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation) failed (errno \(code))" }
}
