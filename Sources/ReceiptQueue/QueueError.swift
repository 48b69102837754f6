import PostgresClient

/// An error of the queue layer that is not a plain database error: a missing, changed or failed migration, a row
/// that does not decode. Database errors of the queue's statements pass through as `PostgresError`; a migration that
/// the server rejects keeps the server's error (and its SQLSTATE) in `postgres`.
public struct QueueError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The SQL directory, its manifest (`apply.sql`) or one of its files cannot be found or read, or the
        /// manifest and the files disagree.
        case sqlFiles
        /// An applied migration's file has changed since.
        case changedMigration
        /// The database records a migration this version does not know (it was migrated by a newer version).
        case unknownMigration
        /// The server rejected a migration or definition file; `postgres` holds its error.
        case migrationFailed
        /// The connection would create receipt-worker's objects in a schema other than `public`.
        case wrongSchema
        /// The database's encoding is not UTF8: the JSON the worker writes (escapes such as `\u0085`) and Apple's
        /// text need it.
        case wrongEncoding
        /// A queue function answered with something this version cannot read.
        case unexpectedAnswer
    }

    public var code: Code
    public var message: String
    /// The server's error, when the server rejected the statement.
    public var postgres: PostgresError?

    public init(_ code: Code, _ message: String, postgres: PostgresError? = nil) {
        self.code = code
        self.message = message
        self.postgres = postgres
    }

    /// The SQLSTATE of the server's error, if any.
    public var sqlState: String? { postgres?.sqlState }

    public var description: String {
        guard let postgres else { return message }
        return "\(message): \(postgres)"
    }
}
