/// Why the demo stopped before its tables were all as expected: printed as one line.
public struct DemoError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Hashable {
        /// A temporary PostgreSQL cluster could not start.
        case postgres
        /// The fake App Store could not start.
        case fakeAppStore
        /// A signal (SIGINT, SIGTERM) stopped the run.
        case interrupted
        /// The worker stopped with an error.
        case worker
        /// The jobs were not all final in time.
        case timedOut
        /// Some orders did not get the verdict the demo expects.
        case unexpectedVerdicts
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
