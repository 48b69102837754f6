import CLibPQ

extension PostgresError {
    /// The error described by a failed `PGresult` (which the caller still owns).
    init(result: OpaquePointer, kind: Kind) {
        // The field codes are the character macros of postgres_ext.h (`PG_DIAG_SQLSTATE` is 'C', ...), which
        // Swift does not import.
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        self.init(
            kind: kind,
            sqlState: field("C"),
            message: field("M") ?? trimmedMessage(PQresultErrorMessage(result)),
            detail: field("D"),
            hint: field("H"),
            constraint: field("n")
        )
    }

    /// The connection's last error (`PQerrorMessage`): `.connectionLost` if the connection is now broken,
    /// `otherwise` if it is still usable.
    init(connection: OpaquePointer, otherwise: Kind) {
        self.init(
            kind: PQstatus(connection) == CONNECTION_BAD ? .connectionLost : otherwise,
            message: trimmedMessage(PQerrorMessage(connection))
        )
    }

    /// The error for a call made on a connection that was closed (or never re-opened after a failed reconnect).
    static let closed = PostgresError(kind: .connectionLost, message: "the connection is closed")
}
