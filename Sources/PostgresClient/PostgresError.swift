/// An error from the PostgreSQL client: what went wrong, and what the server said about it.
///
/// Messages come from libpq or the server; any password of the connection string is masked out of them, so they
/// are safe to log.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// Where the failure happened.
    public enum Kind: Sendable, Hashable {
        /// The connection could not be established (server down, refused, authentication failed).
        case connectionFailed
        /// An established connection broke, or was closed, before or during the command.
        case connectionLost
        /// The server rejected the command; `sqlState` says why.
        case queryFailed
        /// The connection string could not be parsed; nothing was sent anywhere.
        case badConnectionString
        /// The server answered in a way this client does not handle (e.g. `COPY`), or a local call failed.
        case protocolError
    }

    public var kind: Kind
    /// The five-character SQLSTATE code (e.g. `23505`), when the server sent one.
    public var sqlState: String?
    /// The primary message, without a trailing newline.
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The constraint a violation is about (e.g. the unique index of a `23505`).
    public var constraint: String?

    public init(
        kind: Kind,
        sqlState: String? = nil,
        message: String,
        detail: String? = nil,
        hint: String? = nil,
        constraint: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
    }

    /// True when retrying on a new connection may succeed: the connection failed or broke, or the server said
    /// so (SQLSTATE class 08 "connection exception", 57P01 admin shutdown, 57P02 crash shutdown,
    /// 57P03 cannot connect now).
    public var isConnectionProblem: Bool {
        switch kind {
        case .connectionFailed, .connectionLost:
            return true
        case .queryFailed, .badConnectionString, .protocolError:
            guard let sqlState else { return false }
            return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
        }
    }

    /// True when the server gave up on the statement only because of another transaction, and the same statement
    /// run again may well succeed: a deadlock it broke (40P01) or a serialization failure (40001).
    public var isTransientConflict: Bool {
        kind == .queryFailed && (sqlState == "40P01" || sqlState == "40001")
    }

    /// What happened, in words (for logs and messages), then what the server or libpq said.
    public var description: String {
        var text = switch kind {
        case .connectionFailed: "cannot connect to PostgreSQL"
        case .connectionLost: "the connection to PostgreSQL was lost"
        case .queryFailed: "PostgreSQL refused the statement"
        case .badConnectionString: "the connection string is not valid"
        case .protocolError: "unexpected answer from PostgreSQL"
        }
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        text += ": \(message)"
        if let detail { text += " (detail: \(detail))" }
        if let hint { text += " (hint: \(hint))" }
        if let constraint { text += " (constraint: \(constraint))" }
        return text
    }
}
