import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// enqueue_transaction(): the StoreKit 2 entry point shares enqueue_receipt()'s rules (one job per open order,
/// order_conflict, malformed input recorded at once) and records which kind of input the job carries.
@Suite("enqueue_transaction", .serialized, .ownThread)
struct EnqueueTransactionTests {
    /// A JWS-shaped string: base64url JSON header and payload, any signature.
    static func jws(_ payload: String = #"{"transactionId":"1"}"#) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"ES256"}"#) + "." + part(payload) + "." + part("signature")
    }

    static func enqueue(
        _ db: PostgresConnection, signed: String? = nil, transaction: String? = nil, order: String,
        user: String = "u-1", product: String = "pro.monthly", token: String? = nil
    ) throws -> Int64 {
        let rows = try db.query(
            """
            SELECT enqueue_transaction(signed_transaction => $1, transaction_id => $2, order_id => $3, user_id => $4,
                                       product_id => $5, bundle_id => 'com.example.app',
                                       app_account_token => $6::uuid) AS id
            """,
            [signed, transaction, order, user, product, token]
        )
        return try #require(rows.int64(0, "id"))
    }

    static func row(_ db: PostgresConnection, _ id: Int64) throws -> [String: String] {
        let rows = try db.query(
            """
            SELECT kind, state, coalesce(reason, '') AS reason, coalesce(last_error, '') AS last_error,
                   (signed_transaction IS NOT NULL)::text AS stored, (receipt_hash IS NOT NULL)::text AS hashed,
                   coalesce(app_account_token::text, '') AS token
            FROM receipt_jobs WHERE id = $1
            """,
            [String(id)]
        )
        var row: [String: String] = [:]
        for (index, column) in rows.columns.enumerated() { row[column] = rows.rows.first?[index] ?? "" }
        return row
    }

    @Test("a signed transaction or a transaction id is queued with its kind; the same order again is the same job")
    func queued() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let token = "0b7b2f5e-62f4-4c8e-9d3c-5e1c2a7d9f10"
        let signed = try Self.enqueue(db, signed: Self.jws(), order: "o-1", token: token)
        #expect(try Self.enqueue(db, signed: Self.jws(), order: "o-1", token: token) == signed)
        let row = try Self.row(db, signed)
        #expect(row["kind"] == "signed_transaction")
        #expect(row["state"] == "queued")
        #expect(row["stored"] == "true" && row["hashed"] == "true")
        #expect(row["token"] == token)
        let byId = try Self.enqueue(db, transaction: "2000000123456789", order: "o-2")
        #expect(try Self.row(db, byId)["kind"] == "transaction_id")
        // The same open order, whatever its input, is one job; another user is a conflict.
        #expect(try db.query(
            "SELECT enqueue_receipt('QUFBQQ==', 'o-2', 'u-1', 'pro.monthly', NULL, 'com.example.app') AS id"
        ).int64(0, "id") == byId)
        let conflict = #expect(throws: PostgresError.self) {
            try Self.enqueue(db, transaction: "2000000123456789", order: "o-2", user: "u-2")
        }
        #expect(conflict?.sqlState == "RW409")
        let claimed = try JobStore(connection: db).claim(worker: "w", limit: 10, leaseSeconds: 60)
        let byKind = Dictionary(uniqueKeysWithValues: claimed.map { ($0.kind, $0) })
        #expect(byKind[.signedTransaction]?.signedTransaction == Self.jws())
        #expect(byKind[.signedTransaction]?.order.appAccountToken == token)
        #expect(byKind[.transactionId]?.order.clientTransactionId == "2000000123456789")
    }

    @Test("input that cannot be a signed transaction or a transaction id is rejected at once as malformed_input")
    func malformed() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let cases: [(signed: String?, transaction: String?, error: String)] = [
            (nil, nil, "signed_transaction or transaction_id is required"),
            ("", nil, "signed_transaction is empty"),
            ("abc", nil, "not a JWS"),
            ("a.b.c.d", nil, "not a JWS"),
            ("a.b", nil, "not a JWS"),
            ("a b.c.d", nil, "not a JWS"),
            (Self.jws().replacingOccurrences(of: "eyJ", with: "xyz"), nil, "header is not base64url-encoded JSON"),
            ("WyJhIl0." + Self.jws().split(separator: ".")[1] + ".c2ln", nil, "header is not a JSON object"),
            (Self.jws().split(separator: ".")[0] + ".WyJhIl0.c2ln", nil, "payload is not a JSON object"),
            (Self.jws().split(separator: ".")[0] + "._w.c2ln", nil, "payload is not base64url-encoded JSON"),
            (Self.jws().split(separator: ".")[0] + ".e30xx.c2ln", nil, "payload is not base64url-encoded JSON"),
            (Self.jws().split(separator: ".")[0] + ".eyJhIjox.c2ln", nil, "payload is not base64url-encoded JSON"),
            (String(repeating: "a", count: 10 * 1024 * 1024), nil, "over the limit of 65536"),
            (nil, "12ab", "not an App Store transaction id"),
            (nil, "1' OR '1'='1", "not an App Store transaction id"),
        ]
        for (index, item) in cases.enumerated() {
            let id = try Self.enqueue(db, signed: item.signed, transaction: item.transaction, order: "bad-\(index)")
            let row = try Self.row(db, id)
            #expect(row["state"] == "rejected", "\(index)")
            #expect(row["reason"] == "malformed_input", "\(index)")
            #expect(row["last_error"]?.contains(item.error) == true, "\(index): \(row["last_error"] ?? "")")
            #expect(row["stored"] == "false", "the unusable input is not kept (\(index))")
        }
    }
}
