import Foundation
import PostgresClient
import Testing

/// The API layer's refund functions bound what they store and echo: an id longer than any real one is refused with
/// the function's own error (not PostgreSQL's index-size error, nor a row of junk), and an error message quotes at
/// most the start of a bad value.
@Suite("Refund functions: bounded input", .serialized, .ownThread)
struct RefundInputBoundsTests {
    @Test("set_customer_consent refuses a user id over 256 bytes; record_consumption a transaction id over 64")
    func longIds() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let consent = #expect(throws: PostgresError.self) {
            try db.query("SELECT set_customer_consent($1, true)", [String(repeating: "u", count: 257)])
        }
        #expect(consent?.sqlState == "22023", "\(String(describing: consent))")
        _ = try db.query("SELECT set_customer_consent($1, true)", [String(repeating: "u", count: 256)])
        let consumption = #expect(throws: PostgresError.self) {
            try db.query("SELECT record_consumption($1, 100)", [String(repeating: "1", count: 65)])
        }
        #expect(consumption?.sqlState == "22023", "\(String(describing: consumption))")
        _ = try db.query("SELECT record_consumption($1, 100)", [String(repeating: "1", count: 64)])
        #expect(try db.query("SELECT count(*) AS n FROM receipt_customer_consents")[0, "n"] == "1")
        #expect(try db.query("SELECT count(*) AS n FROM receipt_consumption")[0, "n"] == "1")
    }

    @Test("answer_refund_request quotes at most the start of a bad value in its error")
    func boundedEcho() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let huge = String(repeating: "x", count: 100_000)
        let error = #expect(throws: PostgresError.self) {
            try db.query("SELECT answer_refund_request('1', $1, 'DECLINE')", [huge])
        }
        #expect(error?.sqlState == "22023")
        #expect(String(describing: error).count < 2_000)
    }
}
