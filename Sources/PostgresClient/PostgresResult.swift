import CLibPQ

/// The rows and status of one command, copied out of libpq's `PGresult` (which is cleared right after), so it
/// can be kept and passed between threads. All values are in PostgreSQL's text format.
public struct PostgresResult: Sendable {
    /// Column names, in select-list order.
    public var columns: [String]
    /// One array per row, one value per column; `nil` is SQL `NULL`.
    public var rows: [[String?]]
    /// Rows inserted, updated, deleted, selected, ... as reported by the command tag; 0 when it reports none.
    public var affectedRows: Int
    /// The command tag, e.g. `INSERT 0 1`, `UPDATE 3`, `COMMIT` (or `ROLLBACK` for a commit that failed).
    public var commandTag: String

    public init(columns: [String] = [], rows: [[String?]] = [], affectedRows: Int = 0, commandTag: String = "") {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    /// The value in `row` of the column named `column`; `nil` when it is `NULL`, the column does not exist or
    /// the row is out of range (no trap: a schema change should fail a job, not the process).
    public subscript(row: Int, column: String) -> String? {
        guard rows.indices.contains(row), let index = columns.firstIndex(of: column) else { return nil }
        let values = rows[row]
        return values.indices.contains(index) ? values[index] : nil
    }

    /// The value as an integer; `nil` when it is `NULL`, missing, or not an integer.
    public func int64(_ row: Int, _ column: String) -> Int64? {
        self[row, column].flatMap { Int64($0) }
    }

    /// True when the command returned no rows.
    public var isEmpty: Bool { rows.isEmpty }
}

extension PostgresResult {
    /// Copies everything out of `result`; the caller still owns (and clears) it.
    init(copying result: OpaquePointer) {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [[String?]] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            rows.append(
                (0..<Int32(columnCount)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                }
            )
        }
        self.init(
            columns: columns,
            rows: rows,
            affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0,
            commandTag: String(cString: PQcmdStatus(result))
        )
    }
}
