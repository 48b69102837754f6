import Foundation
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing

/// receipt_complete() credits a whole batch in a few set-based statements, and hands what they cannot settle to
/// receipt_credit() one job at a time. These call it directly, with outcomes that meet inside one batch.
@Suite("receipt_complete: crediting within one batch", .serialized, .ownThread)
struct BatchCreditTests {
    static let product = "pro.monthly"

    static func purchase(_ transaction: String, chain: String? = nil) -> Purchase {
        Purchase(
            transactionId: transaction, originalTransactionId: chain ?? transaction, productId: product,
            purchaseDateMs: Harness.now - 60_000
        )
    }

    /// Claims every queued job and writes a verified outcome for each, with the candidates `candidates` gives its
    /// order: one receipt_complete() call. Returns each job's completion by order id.
    static func verify(
        _ h: Harness, _ candidates: [String: [Purchase]]
    ) throws -> [String: JobStore.Completion] {
        let jobs = try h.store.claim(worker: "batch-test", limit: 100, leaseSeconds: 60)
        #expect(jobs.count == candidates.count)
        let outcomes = jobs.map { job in
            JobOutcome(
                lease: job.lease, kind: .verified, appleStatus: 0, environment: .production,
                candidates: candidates[job.order.orderId] ?? [], maxAttempts: 10
            )
        }
        let completions = try h.store.complete(outcomes)
        var byOrder: [String: JobStore.Completion] = [:]
        for (job, completion) in zip(jobs, completions) {
            #expect(job.id == completion.jobId)
            byOrder[job.order.orderId] = completion
        }
        return byOrder
    }

    func enqueue(_ h: Harness, _ order: String, user: String) throws {
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase(order)]), order: order, user: user)
    }

    @Test("one chain for two users in one batch: one credit, the other owned_by_other_user")
    func chainForTwoUsers() throws {
        let h = try Harness()
        try enqueue(h, "alice-1", user: "alice")
        try enqueue(h, "mallory-1", user: "mallory")
        let done = try Self.verify(h, [
            "alice-1": [Self.purchase("5001", chain: "5000")],
            "mallory-1": [Self.purchase("5002", chain: "5000")],
        ])
        let states = Set(done.values.map { "\($0.state)/\($0.reason ?? "-")" })
        #expect(states == ["verified/-", "rejected/owned_by_other_user"], "\(done)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE original_transaction_id = '5000'") == "1")
        let owner = try h.scalar("SELECT user_id FROM receipt_purchase_owners WHERE original_transaction_id = '5000'")
        let credited = try h.scalar("SELECT user_id FROM receipt_transactions WHERE original_transaction_id = '5000'")
        #expect(owner == credited)
    }

    @Test("one purchase for two orders of one user in one batch: one credit, the other already_credited")
    func purchaseForTwoOrders() throws {
        let h = try Harness()
        try enqueue(h, "bob-1", user: "bob")
        try enqueue(h, "bob-2", user: "bob")
        let done = try Self.verify(h, ["bob-1": [Self.purchase("6001")], "bob-2": [Self.purchase("6001")]])
        let states = Set(done.values.map { "\($0.state)/\($0.reason ?? "-")" })
        #expect(states == ["verified/-", "rejected/already_credited"], "\(done)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE credit_key = '6001'") == "1")
    }

    @Test("a first candidate credited earlier: the next one is credited, by the one-by-one path, in the same batch")
    func nextCandidate() throws {
        let h = try Harness()
        try enqueue(h, "carol-0", user: "carol")
        _ = try Self.verify(h, ["carol-0": [Self.purchase("7001")]])
        try enqueue(h, "carol-1", user: "carol")
        try enqueue(h, "dave-1", user: "dave")
        let done = try Self.verify(h, [
            "carol-1": [Self.purchase("7001"), Self.purchase("7002")],
            "dave-1": [Self.purchase("8001")],
        ])
        #expect(done["carol-1"]?.state == .verified)
        #expect(done["carol-1"]?.creditKey == "7002")
        #expect(done["dave-1"]?.state == .verified)
        #expect(done["dave-1"]?.creditKey == "8001")
        let result = try h.scalar(
            "SELECT result->'credited'->>'transaction_id' FROM receipt_jobs WHERE order_id = 'carol-1'"
        )
        #expect(result == "7002", "the verdict names the purchase actually credited")
        #expect(try h.scalar("SELECT order_id FROM receipt_transactions WHERE credit_key = '7001'") == "carol-0")
    }

    /// Calls of the row trigger's function (receipt_jobs_notify_done) that `h.db` has not yet flushed to the
    /// statistics, which it counts once `track_functions` is 'pl'; `flushStatistics` before a transaction makes
    /// them that transaction's. PostgreSQL folds identical NOTIFYs of one transaction into one, so a listener cannot
    /// tell a job announced once from a job announced by receipt_complete() and the trigger both: the calls are
    /// counted instead.
    static func triggerCalls(_ h: Harness) throws -> Int {
        let calls = try h.scalar(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions WHERE funcname = 'receipt_jobs_notify_done'"
        )
        return Int(calls ?? "") ?? -1
    }

    /// Has `h.db` flush its pending statistics as it goes idle after this statement (before it answers).
    static func flushStatistics(_ h: Harness) throws {
        _ = try h.db.query("SELECT pg_stat_force_next_flush()")
    }

    @Test("every verdict of a batch is announced on receipt_jobs_done by receipt_complete, the row trigger standing aside")
    func announced() throws {
        let h = try Harness()
        let listener = try PostgresConnection(h.databaseURL)
        defer { listener.close() }
        try listener.listen("receipt_jobs_done")
        try enqueue(h, "erin-1", user: "erin")
        try enqueue(h, "erin-2", user: "erin")
        _ = try h.db.query("SET track_functions = 'pl'")
        try Self.flushStatistics(h)

        let (done, calls, completeCalls) = try h.db.withTransaction {
            let done = try Self.verify(h, ["erin-1": [Self.purchase("9001")], "erin-2": [Self.purchase("9001")]])
            let completeCalls = try h.scalar(
                "SELECT sum(calls) FROM pg_stat_xact_user_functions WHERE funcname = 'receipt_complete'"
            )
            return (done, try Self.triggerCalls(h), completeCalls)
        }
        let states = Set(done.values.map { "\($0.state)/\($0.reason ?? "-")" })
        #expect(states == ["verified/-", "rejected/already_credited"], "\(done)")
        #expect(completeCalls == "1", "function calls are counted in this transaction")
        #expect(calls == 0, "the row trigger announced jobs receipt_complete finished")
        let announced = try h.notificationsSoFar(on: listener, channel: "receipt_jobs_done")
        #expect(announced.sorted() == done.values.map { String($0.jobId) }.sorted(), "each job: \(announced)")

        // A job finished elsewhere (the scheduler's dead letters) is announced by the trigger, and counted here.
        try enqueue(h, "erin-3", user: "erin")
        let erin3 = try #require(try h.scalar("SELECT id FROM receipt_jobs WHERE order_id = 'erin-3'"))
        #expect(try h.store.claim(worker: "batch-test", limit: 100, leaseSeconds: 60).count == 1)
        _ = try h.db.query("UPDATE receipt_jobs SET lease_until = now() - interval '1 second' WHERE id = $1", [erin3])
        try Self.flushStatistics(h)
        let (dead, deadCalls) = try h.db.withTransaction {
            (try h.scalar("SELECT dead FROM receipt_sweep(1)"), try Self.triggerCalls(h))
        }
        #expect(dead == "1")
        #expect(deadCalls == 1)
        #expect(try h.notificationsSoFar(on: listener, channel: "receipt_jobs_done") == [erin3])
    }
}
