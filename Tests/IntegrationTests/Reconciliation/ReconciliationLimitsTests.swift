import Dispatch
import Foundation
import Logging
import PostgresClient
import Synchronization
import Testing
import Workers

/// What keeps reconciliation from doing a day twice or holding others up (review of issue 26): a claim that waits
/// for a finish in progress, one event per report day and set of differences, the cap on a report's lines, and
/// `work`'s comparison on a connection of its own.
@Suite("Reconciliation: claims, events, limits, connections", .serialized, .ownThread)
struct ReconciliationLimitsTests {
    typealias Apple = Reconciliation.AppleLine

    @Test("a claim after the lease ran out waits for a finish in progress, and does not take the day it finished")
    func claimWaitsForFinish() throws {
        let url = try TestServer.get().freshDatabase()
        let first = try PostgresConnection(url)
        defer { first.close() }
        let day = try #require(try first.query(
            "SELECT receipt_reconciliation_claim('00:00', 'w1', 0.01, 5)::text"
        ).rows.first?.first ?? nil)
        Thread.sleep(forTimeInterval: 0.05)  // w1's lease runs out while it compares
        // w1 stores its run and records the day done, in one transaction not committed yet (as Reconciler does).
        try first.execute("BEGIN")
        let run = try #require(try first.query(
            "SELECT run_id FROM receipt_reconcile($1::date, 'api', '[]')", [day]
        )[0, "run_id"])
        #expect(try first.query(
            "SELECT receipt_reconciliation_finish($1::date, 'w1', $2::bigint, NULL, 0)::text", [day, run]
        ).rows == [["true"]])

        // Meanwhile w2 asks for the day, on a connection of its own: it sees w1's expired lease.
        let claimed = Mutex<Result<String?, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result<String?, any Error> {
                let second = try PostgresConnection(url)
                defer { second.close() }
                return try second.query("SELECT receipt_reconciliation_claim('00:00', 'w2', 60, 5)::text")
                    .rows.first?.first ?? nil
            }
            claimed.withLock { $0 = result }
            done.signal()
        }
        // w2's claim is under way, waiting for w1's row, before w1 commits (seen from a third connection: inside
        // w1's transaction pg_stat_activity would not change).
        let observer = try PostgresConnection(url)
        defer { observer.close() }
        let waiting = try ReconcileScheduleTests.waitUntil(10) {
            try observer.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND query LIKE '%receipt_reconciliation_claim(%'
                  AND wait_event_type = 'Lock'
                """
            ).rows == [["1"]]
        }
        #expect(waiting)
        try first.execute("COMMIT")
        #expect(done.wait(timeout: .now() + 10) == .success)
        let result = try #require(claimed.withLock { $0 })
        #expect(try result.get() == nil, "w2 took a day w1 had done")
        #expect(try first.query(
            "SELECT state, attempts::text, run_id::text, coalesce(locked_by, '') FROM receipt_reconciliation_schedule"
        ).rows == [["done", "1", run, ""]])
        #expect(try first.query("SELECT count(*) FROM receipt_reconciliations").rows == [["1"]])
    }

    @Test("one reconciliation_differences event per change of a day's differences; runs are all stored")
    func oneEventPerDifferences() throws {
        let world = try ReconciliationTests.World()
        try world.credit("forged", at: "2026-11-20T12:00:00Z")
        func events() throws -> [String] {
            try world.db.query(
                "SELECT reason FROM receipt_events WHERE kind = 'reconciliation_differences' ORDER BY id"
            ).rows.map { $0.first.flatMap { $0 } ?? "" }
        }
        let lost = [ReconciliationTests.apple("lost")]
        let first = try world.run("2026-11-20", lost)
        #expect(first.differences == 2)
        #expect(try events().count == 1)
        // The same day again, the same differences: stored, no new event.
        let again = try world.run("2026-11-20", lost)
        #expect(again.differences == 2 && again.id != first.id)
        #expect(try events().count == 1)
        // Another difference (Apple's units): a new event.
        let more = try world.run("2026-11-20", [ReconciliationTests.apple("lost", units: 2)])
        #expect(more.differences == 2)
        #expect(try events().count == 2)
        let latest = try events().last ?? ""
        #expect(latest.contains("reconciliation \(more.id) of 2026-11-20"), "\(latest)")
        // Back to what the first run found: the last word was the other set, so the operator is told again.
        let back = try world.run("2026-11-20", lost)
        #expect(try events().count == 3)
        #expect((try events().last ?? "").contains("reconciliation \(back.id) of 2026-11-20"))
        // The same differences on another day are that day's.
        try world.credit("forged", at: "2026-11-21T12:00:00Z")
        _ = try world.run("2026-11-21", lost)
        #expect(try events().count == 4)
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations") == 5)
    }

    @Test("a report of more than 1,000,000 lines is refused before any is read, and nothing is stored")
    func lineCap() throws {
        let world = try ReconciliationTests.World()
        // Numbers, not lines: the cap is checked before the lines are, so the error is the cap's.
        let numbers = "SELECT * FROM receipt_reconcile('2026-11-20', 'file', "
            + "(SELECT jsonb_agg(g) FROM generate_series(1, $1::integer) g))"
        let over = #expect(throws: PostgresError.self) { try world.db.query(numbers, ["1000001"]) }
        #expect(over?.sqlState == "54000", "\(String(describing: over))")
        #expect(over?.message.contains("1000001 report lines, over the limit of 1000000") == true,
                "\(String(describing: over))")
        // At the limit, the lines themselves are read (and this first one is not a line).
        let at = #expect(throws: PostgresError.self) { try world.db.query(numbers, ["1000000"]) }
        #expect(at?.sqlState == "22023" && at?.message.contains("report line 1 ") == true, "\(String(describing: at))")
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations") == 0)
    }

    @Test("work compares on a connection of its own: the maintenance connection sweeps while a comparison waits")
    func ownConnection() throws {
        let url = try TestServer.get().freshDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        let locker = try PostgresConnection(url)
        defer { locker.close() }
        // The comparison's INSERT into receipt_reconciliations waits for this lock: a reconciliation that takes long.
        try locker.execute("BEGIN; LOCK TABLE receipt_reconciliations IN SHARE ROW EXCLUSIVE MODE")
        var locked = true
        defer { if locked { try? locker.execute("ROLLBACK") } }
        let threads = try ReconcileScheduleTests.workers(1, databaseURL: url) { _ in
            .lines([Apple(sku: "lost", country: "US", currency: "USD", price: "0.99", units: 1)])
        }
        defer { for thread in threads { thread.stop(waitingUpTo: 10) } }
        let comparing = #"query LIKE '%receipt_reconcile(%' AND wait_event_type = 'Lock'"#
        let blocked = try ReconcileScheduleTests.waitUntil(30) {
            try db.query("SELECT count(*) FROM pg_stat_activity WHERE \(comparing)").rows == [["1"]]
        }
        try #require(blocked)
        // The scheduler (every 0.05 s in tests) goes on, on another connection, while the comparison waits (which it
        // does until the lock is let go; 30 s for a loaded machine).
        let swept = try ReconcileScheduleTests.waitUntil(30) {
            try db.query(
                """
                SELECT count(*) FROM pg_stat_activity s
                WHERE s.pid <> pg_backend_pid() AND s.query LIKE '%receipt_sweep(%' AND s.query_start > (
                    SELECT b.query_start FROM pg_stat_activity b WHERE b.\(comparing))
                """
            ).rows.first?.first != "0"
        }
        #expect(swept, "no sweep while the comparison waited: the maintenance connection was held by it")
        let others = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN ($1, $2)"
        let ours = try [db, locker].map { try $0.query("SELECT pg_backend_pid()::text").rows[0][0] }
        let whileComparing = try Int(#require(try db.query(others, ours).rows.first?.first ?? nil)) ?? 0
        try locker.execute("ROLLBACK")
        locked = false
        let done = try ReconcileScheduleTests.waitUntil(30) {
            try db.query("SELECT state FROM receipt_reconciliation_schedule").rows.first?.first == "done"
        }
        #expect(done)
        // And the comparison's connection is closed once the day is done: the worker has one connection less.
        let closed = try ReconcileScheduleTests.waitUntil(30) {
            try db.query(others, ours).rows == [[String(whileComparing - 1)]]
        }
        #expect(closed)
    }
}
