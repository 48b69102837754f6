#if os(Linux)
import Foundation
import PostgresClient
import Testing

/// answer_refund_request() under receipt_api must not cut short the hold a worker took on a refund request while it
/// sends the answer (receipt_refund_requests_due() holds it p_hold_seconds): otherwise a second worker takes the same
/// request at once and Apple receives two answers (the second, the app's, possibly contradicting the first).
@Suite("Refund requests: the app's answer does not release a request a worker is sending", .serialized, .ownThread)
struct RefundAnswerHoldTests {
    @Test("an answer given while a worker holds the request is not handed to a second worker")
    func answerKeepsTheHold() throws {
        let world = try RolesTests.worldWithRoles()
        try world.query(
            """
            INSERT INTO receipt_refund_requests (environment, transaction_id, user_id, respond_by)
            VALUES ('Production', '2000000000000001', 'user-1', now() + interval '12 hours')
            """
        )
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { api.close() }
        let worker = try PostgresConnection(RolesTests.url(world, as: "worker_login"))
        defer { worker.close() }

        _ = try api.query("SELECT set_customer_consent('user-1', true)")
        _ = try api.query("SELECT answer_refund_request('2000000000000001', 'DELIVERED', 'DECLINE')")
        // The first worker takes it and holds it for 10 minutes while it sends DECLINE.
        let first = try worker.query("SELECT id, answer FROM receipt_refund_requests_due(10, 720, 600)")
        try #require(first.rows.count == 1, "the answered request is due: \(first.rows)")
        #expect(first.rows[0][1]?.contains("DECLINE") == true)

        // The app changes its mind during the send.
        _ = try api.query("SELECT answer_refund_request('2000000000000001', 'DELIVERED', 'GRANT_FULL')")
        let second = try worker.query("SELECT id, answer FROM receipt_refund_requests_due(10, 720, 600)")
        #expect(second.rows.isEmpty, "taken again while the first worker still sends it: \(second.rows)")
    }

    @Test("an answer given before any worker took the request is due at once")
    func answerBeforeTheSendIsDue() throws {
        let world = try RolesTests.worldWithRoles()
        try world.query(
            """
            INSERT INTO receipt_refund_requests (environment, transaction_id, user_id, respond_by)
            VALUES ('Production', '2000000000000002', 'user-2', now() + interval '12 hours')
            """
        )
        let api = try PostgresConnection(RolesTests.url(world, as: "api_login"))
        defer { api.close() }
        let worker = try PostgresConnection(RolesTests.url(world, as: "worker_login"))
        defer { worker.close() }
        _ = try api.query("SELECT set_customer_consent('user-2', true)")
        #expect(try worker.query("SELECT id FROM receipt_refund_requests_due(10, 720, 600)").rows.isEmpty)
        _ = try api.query("SELECT answer_refund_request('2000000000000002', 'DELIVERED', 'GRANT_FULL')")
        let due = try worker.query("SELECT answer FROM receipt_refund_requests_due(10, 720, 600)")
        try #require(due.rows.count == 1)
        #expect(due.rows[0][0]?.contains("GRANT_FULL") == true)
    }
    @Test("after roles.sql, no function of ours is executable by PUBLIC (every role of the cluster)")
    func noFunctionLeftToPublic() throws {
        let world = try RolesTests.worldWithRoles()
        let open = try world.query(
            """
            SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public'
              AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                                               WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))
            ORDER BY 1
            """
        )
        #expect(open.rows.isEmpty, "executable by PUBLIC: \(open.rows.map { $0[0] ?? "?" })")
    }
}
#endif
