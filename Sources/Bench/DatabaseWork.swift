import PostgresClient

/// What PostgreSQL wrote while the worker drained the queue: WAL bytes (how far the WAL insert position moved) and
/// write transactions (transaction ids handed out). Both are read from the server's counters before and after, so
/// they are exact whatever else the machine is doing, and they include what autovacuum wrote meanwhile.
public struct DatabaseWork: Sendable, Codable {
    public var walBytes: Int64
    public var writeTransactions: Int64

    /// The counters at one moment.
    struct Mark {
        var lsn: String
        var nextTransaction: Int64
    }

    static let markQuery = """
        SELECT pg_current_wal_insert_lsn()::text AS lsn, txid_snapshot_xmax(txid_current_snapshot()) AS next
        """

    static func mark(_ connection: PostgresConnection) throws -> Mark {
        let result = try connection.query(markQuery)
        guard let lsn = result[0, "lsn"], let next = result.int64(0, "next") else {
            throw BenchError("could not read the WAL position and the next transaction id")
        }
        return Mark(lsn: lsn, nextTransaction: next)
    }

    /// The work done since `start`.
    static func since(_ start: Mark, _ connection: PostgresConnection) throws -> DatabaseWork {
        let end = try mark(connection)
        let bytes = try connection.query(
            "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint AS bytes", [end.lsn, start.lsn]
        )
        return DatabaseWork(
            walBytes: bytes.int64(0, "bytes") ?? 0, writeTransactions: end.nextTransaction - start.nextTransaction
        )
    }
}
