import CLibPQ

/// A blocking connection to a PostgreSQL server through libpq.
///
/// Not thread-safe and deliberately not `Sendable`: like the `PGconn` it wraps, a connection is used by one
/// thread at a time (give each worker its own). Every call blocks the calling thread until the server answers.
///
/// Values always travel as query parameters in text format, never spliced into the SQL.
/// A failed call throws ``PostgresError``; when ``PostgresError/isConnectionProblem`` is true, ``reconnect()``
/// opens a new connection and restores the prepared statements and `LISTEN`s made on this one.
public final class PostgresConnection {
    /// The connection string as given: kept to reconnect, never put into error messages.
    private let connectionString: String
    /// The live `PGconn`; `nil` after ``close()`` or a failed ``reconnect()``.
    private var handle: OpaquePointer?
    /// Statements prepared on this connection, in order, to prepare again after ``reconnect()``.
    private var preparedStatements: [(name: String, sql: String)] = []
    /// Channels listened to, in order, to listen to again after ``reconnect()``.
    var listenedChannels: [String] = []
    private let notices = NoticeSink()

    /// Receives the server's `NOTICE`/`WARNING` messages (e.g. from `RAISE NOTICE`), which libpq would otherwise
    /// print on stderr. `nil` (the default) drops them.
    public var noticeHandler: ((String) -> Void)? {
        get { notices.handler }
        set { notices.handler = newValue }
    }

    /// Connects at once.
    ///
    /// - Parameter connectionString: a URL (`postgresql://user@host:5432/db?sslmode=disable`) or `key=value`
    ///   pairs. Unless the string sets them, `application_name` is `receipt-worker`, `client_encoding` is `UTF8`
    ///   and `connect_timeout` is 10 seconds.
    /// - Throws: ``PostgresError`` `.badConnectionString` if it does not parse, `.connectionFailed` if the server
    ///   cannot be reached or refuses.
    public init(_ connectionString: String) throws {
        self.connectionString = connectionString
        self.handle = try Self.connect(connectionString, notices: notices)
    }

    deinit {
        close()
    }

    /// True while the connection is usable, as far as libpq knows: a server that went away is noticed by the
    /// next call (or ``waitForNotifications(timeoutMilliseconds:)``), not before.
    public var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The process ID of the server backend serving this connection; 0 when closed.
    public var serverProcessID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    /// Closes the connection. Later calls throw `.connectionLost` until ``reconnect()``.
    public func close() {
        if let handle {
            PQfinish(handle)
            self.handle = nil
        }
    }

    /// Replaces the connection with a new one to the same server, then prepares the same statements and listens
    /// to the same channels again. Notifications sent while disconnected are lost. If preparing or listening
    /// again fails, that error is thrown and the new connection stays open; calling `reconnect()` again retries.
    public func reconnect() throws {
        close()
        handle = try Self.connect(connectionString, notices: notices)
        for statement in preparedStatements {
            try run { connection in PQsendPrepare(connection, statement.name, statement.sql, 0, nil) }
        }
        for channel in listenedChannels {
            try execute("LISTEN \(quoteIdentifier(channel))")
        }
    }

    /// Runs one statement with `parameters` bound to `$1`, `$2`, ... (`nil` is SQL `NULL`).
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws -> PostgresResult {
        try requireNoNUL(sql)
        return try withCStrings(parameters) { values in
            try run { connection in
                PQsendQueryParams(connection, sql, Int32(values.count), nil, values, nil, nil, 0)
            }
        }
    }

    /// Runs SQL text without parameters through the simple query protocol, so it may hold several statements
    /// (a migration file). Stops at the first failing statement and throws its error.
    public func execute(_ sql: String) throws {
        try requireNoNUL(sql)
        try run { connection in PQsendQuery(connection, sql) }
    }

    /// Prepares `sql` under `name` on the server, for ``executePrepared(_:_:)``; kept across ``reconnect()``.
    public func prepare(_ name: String, _ sql: String) throws {
        try requireNoNUL(name)
        try requireNoNUL(sql)
        try run { connection in PQsendPrepare(connection, name, sql, 0, nil) }
        preparedStatements.removeAll { $0.name == name }
        preparedStatements.append((name, sql))
    }

    /// Runs the statement prepared as `name` with `parameters` (`nil` is SQL `NULL`).
    @discardableResult
    public func executePrepared(_ name: String, _ parameters: [String?] = []) throws -> PostgresResult {
        try requireNoNUL(name)
        return try withCStrings(parameters) { values in
            try run { connection in
                PQsendQueryPrepared(connection, name, Int32(values.count), values, nil, nil, 0)
            }
        }
    }

    /// The live handle, for the extensions in this module.
    func liveHandle() throws -> OpaquePointer {
        guard let handle else { throw PostgresError.closed }
        return handle
    }

    /// Sends a command with `send` (a `PQsend…` call returning 1 on success) and reads all its results.
    @discardableResult
    private func run(_ send: (OpaquePointer) -> Int32) throws -> PostgresResult {
        let connection = try liveHandle()
        guard send(connection) == 1 else {
            throw PostgresError(connection: connection, otherwise: .protocolError)
        }
        return try collectResults(connection)
    }
}

/// A `PostgresConnection` must not cross threads; this makes the compiler say so explicitly.
@available(*, unavailable)
extension PostgresConnection: Sendable {}
