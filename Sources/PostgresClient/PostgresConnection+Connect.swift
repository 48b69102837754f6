import CLibPQ

extension PostgresConnection {
    /// Settings applied unless the connection string sets them. Swift strings are UTF-8, so the server must
    /// send and expect UTF-8 whatever the database encoding; a server that cannot be reached should fail the
    /// connection in seconds, not after the operating system's TCP timeout.
    static let defaultSettings: [(keyword: String, value: String)] = [
        ("application_name", "receipt-worker"),
        ("client_encoding", "UTF8"),
        ("connect_timeout", "10"),
    ]

    /// Opens a `PGconn`, finishing it again if the connection fails.
    static func connect(_ connectionString: String, notices: NoticeSink) throws -> OpaquePointer {
        try validate(connectionString)
        // libpq applies keywords in order and the last one wins: the defaults go first, then `dbname`, which
        // `expand_dbname` expands into every setting of the connection string, overriding the defaults.
        let keywords = defaultSettings.map(\.keyword) + ["dbname", nil]
        let values = defaultSettings.map(\.value) + [connectionString, nil]
        let connection = try withCStrings(keywords) { keywords in
            try withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PostgresError(kind: .connectionFailed, message: "out of memory allocating a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PasswordRedaction.redact(
                trimmedMessage(PQerrorMessage(connection)),
                connectionString: connectionString
            )
            // libpq checks some option values only when it connects ("invalid port number", "invalid sslmode
            // value", "invalid integer value … for connection option"): those are the string's fault, not the
            // server's, and waiting for the server would never help.
            let kind: PostgresError.Kind = message.hasPrefix("invalid ") ? .badConnectionString : .connectionFailed
            let error = PostgresError(kind: kind, message: message)
            PQfinish(connection)
            throw error
        }
        PQsetNoticeProcessor(connection, forwardNotice, Unmanaged.passUnretained(notices).toOpaque())
        return connection
    }

    /// Parses the string without connecting, so that a malformed one is reported as such.
    private static func validate(_ connectionString: String) throws {
        guard !connectionString.utf8.contains(0) else {
            throw PostgresError(kind: .badConnectionString, message: "the connection string contains a NUL character")
        }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            defer { PQfreemem(errorMessage) }
            let message = errorMessage.map { trimmedMessage($0) } ?? "out of memory parsing the connection string"
            throw PostgresError(
                kind: .badConnectionString,
                message: PasswordRedaction.redact(message, connectionString: connectionString)
            )
        }
        PQconninfoFree(options)
    }
}

/// Holds the notice handler of one connection; libpq gets an unretained pointer to it, which stays valid because
/// the connection owns the sink and finishes its `PGconn` before releasing it.
final class NoticeSink {
    var handler: ((String) -> Void)?
}

/// libpq's notice processor: hands the message to the connection's handler instead of printing it on stderr.
private func forwardNotice(_ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let context else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    sink.handler?(trimmedMessage(message))
}
