import CLibPQ

extension PostgresConnection {
    /// Runs `body` between `BEGIN` and `COMMIT`. If `body` throws, the transaction is rolled back and the error
    /// `body` threw is rethrown (a failing `ROLLBACK` is ignored: a broken connection loses the transaction anyway).
    ///
    /// A `COMMIT` that the server turns into a rollback (because a statement in the transaction failed and `body`
    /// caught that error) throws `.queryFailed` with SQLSTATE 25P02 rather than pretending to succeed.
    /// Transactions do not nest: calling this inside a transaction throws without running `body`.
    @discardableResult
    public func withTransaction<T>(_ body: () throws -> T) throws -> T {
        let connection = try liveHandle()
        guard PQtransactionStatus(connection) == PQTRANS_IDLE else {
            throw PostgresError(kind: .queryFailed, message: "withTransaction called while a transaction is open")
        }
        try execute("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        let commit = try query("COMMIT")
        guard commit.commandTag == "COMMIT" else {
            throw PostgresError(
                kind: .queryFailed,
                sqlState: "25P02",
                message: "the transaction was rolled back at COMMIT because a statement in it had failed"
            )
        }
        return value
    }
}
