import Foundation
import PostgresClient
import Testing
import ThreadSupport

/// Writers side by side (`WRITE_CONNECTIONS`, or several workers) take the revocation lock (1380667990, 'RKRV')
/// before any chain, so a batch and a REFUND written beside it cannot deadlock. The batch below holds chain A1 (a
/// renewal-status change) and would then credit a DID_RENEW (the lock, shared) while a REFUND of A1, written alone,
/// holds the lock exclusively and waits for A1: a cycle PostgreSQL breaks after `deadlock_timeout`, the batch then
/// written again one by one. `receipt_notification_apply_batch()` takes the lock shared before its first item.
@Suite("Notification writers lock in one order", .serialized, .ownThread)
struct WriterLockOrderTests {
    static func result(
        uuid: String, type: String, transaction: String, chain: String, extra: [String: Any] = [:],
        autoRenew: Int, signed: Int64
    ) throws -> String {
        var tx: [String: Any] = [
            "transaction_id": transaction, "original_transaction_id": chain, "product_id": "sub",
            "purchase_date_ms": 1_764_000_000_000,
        ]
        tx.merge(extra) { _, new in new }
        return try PeriodCreditRevocationRaceTests.json([
            "outcome": "verified",
            "notification": [
                "uuid": uuid, "type": type, "environment": "Sandbox", "bundle_id": "com.x", "signed_date_ms": signed,
            ],
            "transaction": tx,
            "renewal": [
                "original_transaction_id": chain, "product_id": "sub", "auto_renew_status": autoRenew,
                "signed_date_ms": signed,
            ],
        ])
    }

    /// Sessions other than the harness's waiting on a lock of `kind` (pg_stat_activity's wait_event).
    static func waiting(_ h: Harness, on kind: String) throws -> Bool {
        try h.waitUntil(10) {
            try h.scalar(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1
                """,
                [kind]
            ) != "0"
        }
    }

    @Test("a batch holding a chain and a REFUND of that chain written beside it do not deadlock")
    func batchAndRefundBesideIt() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_apps (bundle_id) VALUES ('com.x') ON CONFLICT DO NOTHING")
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('sub', 'auto_renewable')")
        _ = try h.db.query(
            "INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id) VALUES ('Sandbox', 'B1', 'u2')"
        )
        for index in 1...3 { _ = try h.scalar("SELECT receive_notification($1)", ["a.b.c\(index)"]) }
        let claimed = try h.db.query(
            "SELECT id::text, lease_token::text FROM receipt_notification_claim('w', 10, 600, 20) ORDER BY id"
        ).rows
        try #require(claimed.count == 3)
        let (id1, id2, id3) = (claimed[0][0] ?? "", claimed[1][0] ?? "", claimed[2][0] ?? "")
        let (t1, t2, t3) = (claimed[0][1] ?? "", claimed[1][1] ?? "", claimed[2][1] ?? "")
        let signed: Int64 = 1_764_100_000_000
        let statusChange = try Self.result(
            uuid: "11111111-1111-1111-1111-111111111111", type: "DID_CHANGE_RENEWAL_STATUS", transaction: "A1t",
            chain: "A1", autoRenew: 0, signed: signed
        )
        let renewal = try Self.result(
            uuid: "22222222-2222-2222-2222-222222222222", type: "DID_RENEW", transaction: "B1t2", chain: "B1",
            extra: ["web_order_line_item_id": "w2", "expires_date_ms": 1_799_000_000_000], autoRenew: 1,
            signed: signed
        )
        let refund = try Self.result(
            uuid: "33333333-3333-3333-3333-333333333333", type: "REFUND", transaction: "A1t", chain: "A1",
            extra: [
                "web_order_line_item_id": "w1", "expires_date_ms": 1_799_000_000_000,
                "revocation_date_ms": signed + 500, "revocation_reason": 0,
            ],
            autoRenew: 0, signed: signed + 1000
        )

        // A third session holds the DID_RENEW's row: the batch stops there, after the status change took chain A1.
        let holder = try PostgresConnection(h.databaseURL)
        defer { holder.close() }
        _ = try holder.query("BEGIN")
        _ = try holder.query("SELECT id FROM receipt_notifications WHERE id = $1 FOR UPDATE", [id2])
        let batch = h.queryInBackground(
            """
            SELECT string_agg(state, ',' ORDER BY id) FROM receipt_notification_apply_batch(
                ARRAY[$1, $2]::bigint[], ARRAY[$3, $4]::uuid[], ARRAY[$5, $6]::jsonb[])
            """,
            [id1, id2, t1, t2, statusChange, renewal]
        )
        #expect(try Self.waiting(h, on: "transactionid"), "the batch waits for the held row")

        // The REFUND of A1, written alone beside it, takes the lock exclusively and waits: for A1 (before), for the
        // batch's shared lock (now).
        let alone = h.queryInBackground(
            "SELECT receipt_notification_apply($1, $2::uuid, $3::jsonb)", [id3, t3, refund]
        )
        #expect(try Self.waiting(h, on: "advisory"), "the REFUND waits")

        _ = try holder.query("COMMIT")
        let batchStates = batch.wait(for: { $0 }, timeout: .seconds(60))
        let refundState = alone.wait(for: { $0 }, timeout: .seconds(60))
        #expect(batchStates == "applied,applied", "the batch: \(batchStates ?? "still waiting")")
        #expect(refundState == "applied", "the REFUND: \(refundState ?? "still waiting")")
        #expect(try h.scalar("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()") == "0")
    }
}
