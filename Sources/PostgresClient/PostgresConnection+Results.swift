import CLibPQ

extension PostgresConnection {
    /// Reads every result of the command just sent (libpq needs them all read before the next command) and
    /// clears each one. Returns the last successful result, or throws the first error.
    func collectResults(_ connection: OpaquePointer) throws -> PostgresResult {
        var last = PostgresResult()
        var firstError: PostgresError?
        var replicationStarted = false
        reading: while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                last = PostgresResult(copying: result)
            case PGRES_COPY_IN:
                // Refusing the copy makes the server fail the statement; its error result follows.
                PQputCopyEnd(connection, "COPY FROM STDIN is not supported by PostgresClient")
                firstError = firstError ?? Self.unsupportedCopy
            case PGRES_COPY_OUT:
                discardCopyData(connection)
                firstError = firstError ?? Self.unsupportedCopy
            case PGRES_COPY_BOTH:
                replicationStarted = true
                break reading
            case PGRES_BAD_RESPONSE:
                firstError = firstError ?? PostgresError(result: result, kind: .protocolError)
            default:
                firstError = firstError ?? PostgresError(result: result, kind: .queryFailed)
            }
        }
        if replicationStarted {
            // A replication stream never ends on its own: this connection cannot run another command.
            close()
            throw PostgresError(kind: .protocolError, message: "COPY BOTH (replication) is not supported")
        }
        let broken = PQstatus(connection) == CONNECTION_BAD
        if var error = firstError {
            if broken && error.kind == .queryFailed { error.kind = .connectionLost }
            throw error
        }
        if broken {
            throw PostgresError(connection: connection, otherwise: .connectionLost)
        }
        return last
    }

    private static let unsupportedCopy = PostgresError(
        kind: .protocolError,
        message: "COPY to or from the client is not supported by PostgresClient"
    )

    /// Reads and drops the rows of a `COPY ... TO STDOUT` until it ends.
    private func discardCopyData(_ connection: OpaquePointer) {
        var buffer: UnsafeMutablePointer<CChar>?
        while PQgetCopyData(connection, &buffer, 0) > 0 {
            PQfreemem(buffer)
            buffer = nil
        }
    }
}
