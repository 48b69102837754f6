#if os(Linux)
import Foundation
import PostgresClient
import Testing

/// `refunds --apply` runs under the `receipt_worker` login (deploy/sql/roles.sql): its two functions and the REFUND
/// notification's rules they call are granted to it, and the operator's and the API's logins may not apply a refund.
@Suite("refunds under deploy/sql/roles.sql", .serialized, .ownThread)
struct RefundRecoveryRolesTests {
    @Test("receipt_worker picks the chains and applies a missed refund once; receipt_api and receipt_operator may not")
    func workerApplies() throws {
        let world = try RolesTests.worldWithRoles()
        try world.query("INSERT INTO receipt_apps (bundle_id) VALUES ($1) ON CONFLICT DO NOTHING", [ProcessWorld.bundle])
        try world.query(
            """
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              product_id, quantity, bundle_id, order_id, user_id, purchase_date)
            VALUES ('Production', '3000000000000401', '3000000000000401', '3000000000000401', 'coins.100', 1,
                    $1, 'o-401', 'u', now() - interval '1 minute')
            """,
            [ProcessWorld.bundle]
        )
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let document = """
            {"outcome": "verified", "notification": {"uuid": "\(UUID().uuidString.lowercased())", \
            "type": "REFUND_HISTORY", "environment": "Production", "bundle_id": "\(ProcessWorld.bundle)", \
            "signed_date_ms": \(now)}, "transaction": {"transaction_id": "3000000000000401", \
            "original_transaction_id": "3000000000000401", "product_id": "coins.100", "quantity": 1, \
            "revocation_date_ms": \(now - 1000), "revocation_reason": 0}}
            """
        for login in ["api_login", "operator_login"] {
            let connection = try PostgresConnection(RolesTests.url(world, as: login))
            defer { connection.close() }
            let error = #expect(throws: PostgresError.self, "\(login)") {
                try connection.query("SELECT receipt_refund_recover($1::jsonb)", [document])
            }
            #expect(error?.sqlState == "42501", "\(login): \(String(describing: error))")
        }
        let worker = try PostgresConnection(RolesTests.url(world, as: "worker_login"))
        defer { worker.close() }
        #expect(
            try worker.query("SELECT count(*) FROM receipt_refund_candidates(now() - interval '1 day', 10)").rows
                == [["1"]]
        )
        #expect(try worker.query("SELECT receipt_refund_recover($1::jsonb)", [document]).rows == [["applied"]])
        #expect(try worker.query("SELECT receipt_refund_recover($1::jsonb)", [document]).rows == [["known"]])
        #expect(
            try world.query("SELECT count(*) FROM receipt_transactions WHERE revoked_at IS NOT NULL").rows == [["1"]]
        )
        #expect(try world.query("SELECT count(*) FROM receipt_events WHERE kind = 'revoked'").rows == [["1"]])
    }
}
#endif
