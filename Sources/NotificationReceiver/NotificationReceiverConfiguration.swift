/// How `receipt-worker notifications` listens and stores.
public struct NotificationReceiverConfiguration: Sendable {
    /// The address to bind (NOTIFICATIONS_HOST).
    public var host: String
    /// The port to bind (NOTIFICATIONS_PORT); 0 picks a free one, reported by ``NotificationReceiver/port``.
    public var port: Int
    /// The PostgreSQL connection string; the role needs EXECUTE on `receive_notification()` and nothing else.
    public var databaseURL: String
    /// A larger request body is answered 413. Apple's notifications are a few KiB.
    public var maxBodyBytes: Int
    /// Database connections, each on a thread of its own; notifications beyond these wait their turn.
    public var databaseConnections: Int
    /// Notifications handed to the database and not answered yet, at most (NOTIFICATIONS_MAX_WAITING): past it, a
    /// notification is answered 503 at once (Apple retries), so a database that hangs under a stream of posts holds
    /// at most this many bodies in memory.
    public var maxWaiting: Int
    /// The whole request head must arrive within this long of the connection's start, or kept alive, of the next
    /// request's first bytes (NOTIFICATIONS_HEADER_TIMEOUT_SECONDS); else the connection is closed.
    public var headerTimeout: Duration
    /// The body must arrive within this long of its head (NOTIFICATIONS_BODY_TIMEOUT_SECONDS).
    public var bodyTimeout: Duration
    /// A kept-alive connection with no next request is closed after this long (NOTIFICATIONS_IDLE_TIMEOUT_SECONDS).
    public var idleTimeout: Duration
    /// Connections open at once, at most (NOTIFICATIONS_MAX_CONNECTIONS); one beyond it is closed at once. Apple
    /// posts over a handful; the cap keeps clients that hold connections from using up the open-files limit.
    public var maxConnections: Int
    /// Event loop threads serving HTTP (they never wait on the database).
    public var eventLoopThreads: Int
    /// On stop, how long notifications already handed to the database may take before the process goes on
    /// without their answers (Apple then retries; the same bytes are one row).
    public var shutdownGrace: Duration

    public init(
        host: String = "0.0.0.0",
        port: Int,
        databaseURL: String,
        maxBodyBytes: Int = 64 * 1024,
        databaseConnections: Int = 2,
        maxWaiting: Int = 256,
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60),
        maxConnections: Int = 4096,
        eventLoopThreads: Int = 1,
        shutdownGrace: Duration = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.databaseURL = databaseURL
        self.maxBodyBytes = maxBodyBytes
        self.databaseConnections = databaseConnections
        self.maxWaiting = maxWaiting
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.eventLoopThreads = eventLoopThreads
        self.shutdownGrace = shutdownGrace
    }
}
