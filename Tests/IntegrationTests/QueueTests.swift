import AppleFixtureFiles
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// The queue's guarantees: idempotent enqueue, one credit under racing workers, the lease guard.
@Suite("Queue guarantees", .serialized, .ownThread)
struct QueueTests {
    @Test("the same order enqueued twice is one job; another user or product for it is an order_conflict")
    func idempotentEnqueue() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("q-1")])
        let first = try h.enqueue(receipt, order: "o-1")
        #expect(try h.enqueue(receipt, order: "o-1") == first)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
        let conflict = #expect(throws: PostgresError.self) { try h.enqueue(receipt, order: "o-1", user: "someone-else") }
        #expect(conflict?.sqlState == "RW409")
        #expect(conflict?.message.hasPrefix("order_conflict") == true)
        #expect(throws: PostgresError.self) { try h.enqueue(receipt, order: "o-x", bundle: "com.unknown.app") }
    }

    @Test("fifty orders racing for one transaction across four workers: exactly one credit")
    func racingWorkers() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("race-1", product: "gems")])
        for index in 0..<50 {
            _ = try h.enqueue(receipt, order: "race-\(index)", user: "user-\(index % 3)", product: "gems")
        }
        try h.drain(workers: 4) { $0.claimBatch = 3 }
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'rejected'") == "49")
        #expect(
            try h.scalar("SELECT count(*) FROM receipt_jobs WHERE reason NOT IN ('already_credited', 'owned_by_other_user')") == "0"
        )
        #expect(
            try h.scalar(
                "SELECT count(*) FROM receipt_transactions t JOIN receipt_jobs j ON j.id = t.job_id AND j.state = 'verified'"
            ) == "1"
        )
    }

    @Test("a rescued job cannot be overwritten by its first worker's late answer")
    func leaseGuard() throws {
        let h = try Harness()
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("l-1")]), order: "lease")
        let claimed = try h.store.claim(worker: "slow-worker", limit: 1, leaseSeconds: 0.2)
        let job = try #require(claimed.first)
        #expect(try h.waitUntil(60) { try h.leasesRunOut() })
        #expect(try h.scalar("SELECT problem FROM receipt_jobs_stuck WHERE id = $1", [String(job.id)]) == "lease expired")
        let swept = try h.store.sweep(maxAttempts: 10)
        #expect(swept.rescued == 1)
        #expect(try h.job(job.id)["state"] == "queued")
        let late = JobOutcome(
            lease: job.lease, kind: .verified, environment: .production,
            candidates: [.init(transactionId: "l-1", productId: "pro.monthly", purchaseDateMs: Harness.now)],
            maxAttempts: 10
        )
        let written = try h.store.complete([late])
        #expect(written.first?.state == .lost)
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
        #expect(try h.scalar("SELECT rescues FROM receipt_jobs WHERE id = $1", [String(job.id)]) == "1")
        // The rescued job is then verified normally.
        try h.drain()
        #expect(try h.job(job.id)["state"] == "verified")
    }

    @Test("the ledger refuses updates and deletes except revocations, which go through their history")
    func ledgerIsAppendOnly() throws {
        let h = try Harness()
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("a-1")]), order: "append")
        try h.drain()
        #expect(throws: PostgresError.self) { try h.db.query("UPDATE receipt_transactions SET user_id = 'x'") }
        #expect(throws: PostgresError.self) { try h.db.query("DELETE FROM receipt_transactions") }
        // A revocation set by hand, not recorded in receipt_revocations, is refused.
        let unrecorded = #expect(throws: PostgresError.self) {
            try h.db.query("UPDATE receipt_transactions SET revoked_at = now(), revocation_reason = 'manual'")
        }
        #expect(unrecorded?.sqlState == "23001")
        let id = try #require(try h.scalar("SELECT id FROM receipt_transactions"))
        _ = try h.db.query(
            "SELECT receipt_revocation_change($1, 'revoked', now(), 'manual', now(), 'receipt')", [id]
        )
        #expect(try h.scalar("SELECT revocation_reason FROM receipt_transactions WHERE revoked_at IS NOT NULL") == "manual")
        // The history itself cannot be changed.
        #expect(throws: PostgresError.self) { try h.db.query("DELETE FROM receipt_revocations") }
        #expect(throws: PostgresError.self) { try h.db.query("UPDATE receipt_revocations SET reason = 'x'") }
    }

    @Test("a verdict is delivered once: mark_verdict_delivered is true the first time only")
    func verdictDelivery() throws {
        let h = try Harness()
        let listener = try PostgresConnection(h.databaseURL)
        try listener.listen("receipt_jobs_done")
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("v-1")]), order: "deliver")
        try h.drain()
        let notes = try listener.waitForNotifications(timeoutMilliseconds: 2000)
        #expect(notes.contains { $0.payload == String(id) })
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE finished_at IS NOT NULL AND delivered_at IS NULL") == "1")
        #expect(try h.scalar("SELECT mark_verdict_delivered($1)", [String(id)]) == "t")
        #expect(try h.scalar("SELECT mark_verdict_delivered($1)", [String(id)]) == "f")
    }

    @Test(
        "the real RevenueCat sandbox receipt hops to the sandbox and credits the annual purchase",
        .needsAppleFixtures
    )
    func realReceipt() throws {
        let h = try Harness(fakeConfiguration: .init(sharedSecret: Harness.secret))
        _ = try h.db.query("INSERT INTO receipt_apps VALUES ('com.revenuecat.sampleapp')")
        let receipt = try TestServer.fixture("revenuecat-sandbox-receipt.b64")
        let id = try h.enqueue(
            receipt, order: "rc-1", product: "com.revenuecat.annual_39.99.2_week_intro",
            transaction: "1000000696553650", bundle: "com.revenuecat.sampleapp",
            orderCreatedAt: "2020-07-17T18:39:00Z"
        )
        try h.drain { $0.rules.bundleIds.insert("com.revenuecat.sampleapp") }
        let job = try h.job(id)
        #expect(job["state"] == "verified", "\(job)")
        #expect(job["environment"] == "Sandbox")
        #expect(h.fake.stats().requests["sandbox"] == 1)
        #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE job_id = $1", [String(id)]) == "1000000696553650")
    }
}
