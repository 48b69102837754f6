import Foundation
import PostgresClient
import Testing
import ThreadSupport

/// Rule 14 (docs/architecture.md) against a race: a REFUND of a subscription period P in progress (its revocation
/// recorded and the ledger searched for P, not committed yet) while P is credited by a DID_RENEW or by a subscription
/// refresh. The REFUND holds lock 1380667990 ('RKRV') exclusively; a period credit must take it shared before it
/// checks receipt_known_revoked(), as receipt_credit() does. Otherwise it sees no revocation (not committed yet),
/// credits P after the REFUND's search of the ledger, and P stays credited though Apple refunded it.
@Suite("Period credits wait for a revocation in progress (rule 14)", .serialized, .ownThread)
struct PeriodCreditRevocationRaceTests {
    static let chain = "2000000000000000"

    /// Connection A: a REFUND of `transaction` (receipt_notification_revocation(), which takes the lock exclusively,
    /// records the revocation and searches the ledger), applied in a transaction left open.
    static func revocationInProgress(_ h: Harness, _ transaction: [String: Any]) throws -> PostgresConnection {
        let refund = try PostgresConnection(h.databaseURL)
        _ = try refund.query("BEGIN")
        var revoked = transaction
        revoked["revocation_date_ms"] = Harness.now - 1000
        revoked["revocation_reason"] = 1
        let tx = try json(revoked)
        let event = try json([
            "notification_type": "REFUND", "user_id": "user-1", "bundle_id": "com.example.app",
            "environment": "Production", "transaction_id": transaction["transaction_id"] ?? "",
            "original_transaction_id": chain, "product_id": "pro.monthly",
        ])
        _ = try refund.query(
            "SELECT receipt_notification_revocation(NULL, 'REFUND', 'Production', now(), $1::jsonb, $2::jsonb)",
            [tx, event]
        )
        #expect(try refund.query(
            """
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND classid = 1380667990 AND objid = 0 AND objsubid = 2
              AND mode = 'ExclusiveLock' AND granted AND pid = pg_backend_pid()
            """
        ).rows.first?.first == "1", "the REFUND holds the lock")
        return refund
    }

    /// Whether some other session waits for the lock, by pg_stat_activity (polled for up to 10 s).
    static func creditWaits(_ h: Harness) throws -> Bool {
        try h.waitUntil(10) {
            try h.scalar(
                """
                SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.classid = 1380667990 AND l.objid = 0 AND l.objsubid = 2
                  AND NOT l.granted AND a.wait_event_type = 'Lock' AND a.wait_event = 'advisory'
                """
            ) == "1"
        }
    }

    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test("a DID_RENEW of a period whose REFUND is in progress waits for it, then does not credit the period")
    func renewalWaitsForRefund() throws {
        let h = try NotificationTests.subscribed()
        let start = Harness.now - 60_000
        let period = NotificationTests.period("2000000000000001", wol: "99001", start: start)
        let refund = try Self.revocationInProgress(h, [
            "transaction_id": "2000000000000001", "original_transaction_id": Self.chain,
            "web_order_line_item_id": "99001", "product_id": "pro.monthly", "quantity": 1,
            "purchase_date_ms": start, "expires_date_ms": start + 30 * 86_400_000,
        ])
        defer { refund.close() }

        // Connection B: a worker verifies the DID_RENEW and applies it (receipt_notification_apply()).
        let id = try NotificationTests.receive(h, try NotificationTests.Note(
            type: "DID_RENEW", signedDate: Harness.now + 1000, transaction: period
        ).signed())
        let workers = try h.startWorkers(1) { _ in }
        defer { for thread in workers { thread.worker.shutdown(); thread.wait(seconds: 10) } }
        #expect(try Self.creditWaits(h), "the DID_RENEW waits for the REFUND in progress")
        #expect(try NotificationTests.state(h, id) == "running")

        _ = try refund.query("COMMIT")
        #expect(workers.allSatisfy { $0.wait(seconds: 60) })
        try Harness.rethrow(workers)
        #expect(try NotificationTests.state(h, id) == "applied")
        #expect(try LedgerSecurityTests.ledger(h, "2000000000000001") == nil, "the refunded period is not credited")
        #expect(try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(id)])?
            .contains("revoked this period") == true)
    }

    @Test("a subscription refresh of a period whose REFUND is in progress waits for it, then does not credit it")
    func refreshWaitsForRefund() throws {
        let h = try SubscriptionPlanTests.owned()
        let document = try SubscriptionPlanTests.refreshDocument()
        let transaction = try #require(
            (try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])?["transaction"]
                as? [String: Any]
        )
        let refund = try Self.revocationInProgress(h, transaction)
        defer { refund.close() }

        // Connection B: the refresh, on a thread of its own (it must wait).
        let outcome = h.queryInBackground("SELECT receipt_subscription_refresh($1::jsonb)", [document])
        #expect(try Self.creditWaits(h), "the refresh waits for the REFUND in progress")
        #expect(outcome.withLock { $0 } == nil)

        _ = try refund.query("COMMIT")
        #expect(outcome.wait(for: { $0 }, timeout: .seconds(60)) == "active")
        #expect(try SubscriptionPlanTests.counts(h) == "0 credited, 1 rows", "the refunded period is not credited")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'renewed'") == "0")
    }
}
