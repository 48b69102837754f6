/// How to run the demo: `receipt-worker demo`'s flags and the environment it reads.
public struct DemoOptions: Sendable {
    /// After the tables, keep PostgreSQL and the fake App Store running until a signal.
    public var keep: Bool
    /// The fake App Store's delay before each answer.
    public var appleLatencyMs: Int
    /// Random extra delay, 0…N ms, added to each answer.
    public var appleJitterMs: Int
    /// Give up when the jobs are not all final after this many seconds.
    public var timeoutSeconds: Double
    /// The directory of the SQL files; nil: found beside the binary (or RECEIPT_WORKER_SQL_DIR).
    public var sqlDirectory: String?
    /// An existing database to run in (DATABASE_URL); nil: a temporary PostgreSQL cluster.
    public var databaseURL: String?
    /// The process environment, for locating the SQL files.
    public var environment: [String: String]

    public init(
        keep: Bool = false,
        appleLatencyMs: Int = 300,
        appleJitterMs: Int = 200,
        timeoutSeconds: Double = 120,
        sqlDirectory: String? = nil,
        databaseURL: String? = nil,
        environment: [String: String] = [:]
    ) {
        self.keep = keep
        self.appleLatencyMs = appleLatencyMs
        self.appleJitterMs = appleJitterMs
        self.timeoutSeconds = timeoutSeconds
        self.sqlDirectory = sqlDirectory
        self.databaseURL = databaseURL
        self.environment = environment
    }
}
