/// Why the server (or libpq) refused a connection for a reason that waiting does not fix, as opposed to an outage
/// (connection refused, the server starting up or shutting down, too many clients), which does pass.
///
/// libpq reports a failed connection as text only: `PQconnectdb` keeps no SQLSTATE of the server's FATAL error
/// (`PQresultErrorField` needs a result, and there is none). So these are read from the message, matching the server's
/// and libpq's English texts (PostgreSQL 12-17); a server whose `lc_messages` translates them gives a message that
/// matches none, and the failure is treated as an outage, as before.
public enum ConnectionRefusal: String, Sendable, Hashable, CaseIterable {
    /// 3D000: `database "x" does not exist`.
    case databaseMissing
    /// 28P01/28000: password, peer, ident, SCRAM… authentication failed; the role does not exist or may not log in;
    /// the server asked for a password the connection string does not give.
    case authenticationFailed
    /// 28000: pg_hba.conf has no line that lets this host, user and database in (or one that rejects it): often a
    /// connection without TLS to a server that accepts only `hostssl` lines.
    case notPermitted
    /// The connection string requires TLS (`sslmode=require` or stricter) and the server does not offer it, or
    /// the server's certificate does not verify.
    case tlsFailed
    /// 42501: the role lacks CONNECT on the database.
    case noConnectPrivilege

    /// The fix, in words, for a message that names the variable.
    public var fix: String {
        switch self {
        case .databaseMissing:
            "create the database (createdb, or CREATE DATABASE as a superuser) or correct its name in DATABASE_URL"
        case .authenticationFailed:
            "correct the user name or password in DATABASE_URL (or the role's password: ALTER ROLE … PASSWORD), "
                + "and check the role exists with LOGIN"
        case .notPermitted:
            "add a pg_hba.conf line for this host, user and database (and reload PostgreSQL), or, if the server "
                + "accepts only TLS (hostssl), add sslmode=require to DATABASE_URL"
        case .tlsFailed:
            "enable TLS on the server (ssl = on), or change sslmode in DATABASE_URL (verify-full needs the server's "
                + "CA in sslrootcert)"
        case .noConnectPrivilege:
            "GRANT CONNECT ON DATABASE … TO the role (as the database owner), or use a role that has it"
        }
    }

    /// The refusal a connection failure's message describes; nil for an outage or anything not recognised.
    public init?(message: String) {
        let text = message.lowercased()
        func has(_ words: String...) -> Bool { words.contains { text.contains($0) } }
        // Checked first: while the server is starting or stopping it refuses everyone, whatever their rights.
        if has("the database system is", "too many clients", "remaining connection slots") { return nil }
        if text.contains("database \""), text.contains("\" does not exist") {
            self = .databaseMissing
        } else if has("no pg_hba.conf entry", "pg_hba.conf rejects connection") {
            self = .notPermitted
        } else if has(
            "authentication failed", "fe_sendauth: no password supplied", "is not permitted to log in",
            "password authentication", "scram authentication"
        ) || (text.contains("role \"") && text.contains("\" does not exist")) {
            self = .authenticationFailed
        } else if has(
            "server does not support ssl, but ssl was required", "ssl was required", "certificate verify failed",
            "root certificate file", "server certificate for"
        ) {
            self = .tlsFailed
        } else if has("permission denied for database") {
            self = .noConnectPrivilege
        } else {
            return nil
        }
    }
}

extension PostgresError {
    /// A connection failure that waiting will not fix (see `ConnectionRefusal`); nil for any other error.
    public var refusal: ConnectionRefusal? {
        guard kind == .connectionFailed else { return nil }
        return ConnectionRefusal(message: message)
    }
}
