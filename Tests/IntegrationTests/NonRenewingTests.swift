import Foundation
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing
import ThreadSupport

/// Non-renewing subscriptions: Apple gives them no expiry, receipt_products.duration gives their length, and a user's
/// consecutive purchases of one product stack (sql/functions/receipt_credit.sql).
@Suite("Non-renewing subscriptions: periods from the catalog's duration, stacked per user and product", .serialized, .ownThread)
struct NonRenewingTests {
    static let product = "season.pass"
    static let day: Int64 = 86_400_000

    /// A harness whose catalog lists `season.pass` as non-renewing, one month long.
    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query(
            "INSERT INTO receipt_products (product_id, kind, duration) VALUES ($1, 'non_renewing', '1 month')",
            [product]
        )
        return h
    }

    static func purchase(_ transaction: String, daysAgo: Int64, product: String = product) -> Purchase {
        Purchase(transactionId: transaction, productId: product, purchaseDateMs: Harness.now - daysAgo * day)
    }

    /// Enqueues one order per element and credits them all in one receipt_complete() call.
    static func credit(
        _ h: Harness, _ orders: [(order: String, user: String, purchase: Purchase)]
    ) throws -> [String: JobStore.Completion] {
        for (order, user, purchase) in orders {
            _ = try h.enqueue(
                Harness.receipt(purchases: [Harness.purchase(order)]), order: order, user: user,
                product: purchase.productId
            )
        }
        let candidates = Dictionary(uniqueKeysWithValues: orders.map { ($0.order, [$0.purchase]) })
        let done = try BatchCreditTests.verify(h, candidates)
        for (order, _, _) in orders {
            #expect(done[order]?.state == .verified, "\(order): \(String(describing: done[order]))")
        }
        return done
    }

    /// The ledger row's expires_date minus the given SQL expression, as an interval's text ("00:00:00" when equal).
    static func expires(_ h: Harness, _ transaction: String, minus expression: String) throws -> String? {
        try h.scalar(
            "SELECT (expires_date - (\(expression)))::text FROM receipt_transactions t WHERE transaction_id = $1",
            [transaction]
        )
    }

    /// The ledger row's period: one month from its purchase ("00:00:00"), or from the end of `previous`'s.
    static func period(_ h: Harness, _ transaction: String, after previous: String? = nil) throws -> String? {
        guard let previous else { return try expires(h, transaction, minus: "t.purchase_date + interval '1 month'") }
        return try expires(
            h, transaction,
            minus: "(SELECT expires_date FROM receipt_transactions WHERE transaction_id = '\(previous)') "
                + "+ interval '1 month'"
        )
    }

    static func revoke(_ h: Harness, _ transaction: String) throws {
        let changed = try h.scalar(
            """
            SELECT receipt_revocation_change(id, 'revoked', now(), 'refund', now(), 'receipt')
            FROM receipt_transactions WHERE transaction_id = $1
            """,
            [transaction]
        )
        #expect(changed == "t")
    }

    @Test("one month credited: expires one month after the purchase, and the verdict carries that expiry")
    func oneMonth() throws {
        let h = try Self.harness()
        _ = try Self.credit(h, [("m-1", "alice", Self.purchase("nr-1", daysAgo: 1))])
        #expect(try Self.period(h, "nr-1") == "00:00:00")
        let purchaseMs = try h.scalar(
            "SELECT (extract(epoch FROM purchase_date) * 1000)::bigint FROM receipt_transactions "
                + "WHERE transaction_id = 'nr-1'"
        )
        #expect(purchaseMs == String(Harness.now - Self.day))
        // The verdict: the credited purchase with the ledger's expiry, in Apple's form, like an auto-renewable's.
        let verdict = try h.db.query(
            """
            SELECT j.result->'credited'->>'transaction_id' AS transaction,
                   j.result->>'credit_key' AS credit_key,
                   (j.result->'credited'->>'expires_date_ms')::bigint
                       = (extract(epoch FROM t.expires_date) * 1000)::bigint AS same_expiry
            FROM receipt_jobs j JOIN receipt_transactions t ON t.job_id = j.id
            WHERE j.order_id = 'm-1'
            """
        )
        #expect(verdict[0, "transaction"] == "nr-1")
        #expect(verdict[0, "credit_key"] == "nr-1")
        #expect(verdict[0, "same_expiry"] == "t")
    }

    @Test("a second month bought before the first ends starts when the first ends; another user's does not stack")
    func stacks() throws {
        let h = try Self.harness()
        _ = try Self.credit(h, [("s-1", "alice", Self.purchase("nr-1", daysAgo: 10))])
        _ = try Self.credit(h, [
            ("s-2", "alice", Self.purchase("nr-2", daysAgo: 1)),
            ("s-3", "bob", Self.purchase("nr-3", daysAgo: 1)),
        ])
        #expect(try Self.period(h, "nr-2", after: "nr-1") == "00:00:00")
        #expect(try Self.period(h, "nr-3") == "00:00:00")
        // The purchase date stays Apple's.
        #expect(try h.scalar("SELECT (extract(epoch FROM purchase_date) * 1000)::bigint FROM receipt_transactions "
                             + "WHERE transaction_id = 'nr-2'") == String(Harness.now - Self.day))
        let verdictExpiry = try h.scalar(
            """
            SELECT (j.result->'credited'->>'expires_date_ms')::bigint
                       = (extract(epoch FROM t.expires_date) * 1000)::bigint
            FROM receipt_jobs j JOIN receipt_transactions t ON t.job_id = j.id WHERE j.order_id = 's-2'
            """
        )
        #expect(verdictExpiry == "t", "the verdict carries the stacked end")
    }

    @Test("a month bought after the previous one ended starts at its purchase")
    func afterTheEnd() throws {
        let h = try Self.harness()
        _ = try Self.credit(h, [("a-1", "alice", Self.purchase("nr-1", daysAgo: 90))])
        _ = try Self.credit(h, [("a-2", "alice", Self.purchase("nr-2", daysAgo: 1))])
        #expect(try Self.period(h, "nr-1") == "00:00:00")
        #expect(try Self.period(h, "nr-2") == "00:00:00")
    }

    @Test("a revoked period does not count for stacking")
    func revokedDoesNotStack() throws {
        let h = try Self.harness()
        _ = try Self.credit(h, [("r-1", "alice", Self.purchase("nr-1", daysAgo: 10))])
        try Self.revoke(h, "nr-1")
        _ = try Self.credit(h, [("r-2", "alice", Self.purchase("nr-2", daysAgo: 1))])
        #expect(try Self.period(h, "nr-2") == "00:00:00")
    }

    @Test("products without a duration are credited as before: no computed expiry, the verdict names the candidate")
    func withoutDuration() throws {
        let h = try Self.harness()
        _ = try h.db.query(
            """
            INSERT INTO receipt_products (product_id, kind) VALUES ('old.pass', 'non_renewing'),
                ('pro.monthly', 'auto_renewable'), ('coins', 'consumable')
            """
        )
        var renewing = Self.purchase("ar-1", daysAgo: 2, product: "pro.monthly")
        renewing.webOrderLineItemId = "w-1"
        renewing.expiresDateMs = Harness.now + 20 * Self.day
        _ = try Self.credit(h, [
            ("w-1", "alice", Self.purchase("old-1", daysAgo: 2, product: "old.pass")),
            ("w-2", "alice", Self.purchase("old-2", daysAgo: 1, product: "old.pass")),
            ("w-3", "alice", renewing),
            ("w-4", "alice", Self.purchase("coin-1", daysAgo: 1, product: "coins")),
            ("w-5", "alice", Self.purchase("free-1", daysAgo: 1, product: "not.listed")),
        ])
        let rows = try h.db.query(
            """
            SELECT t.transaction_id,
                   coalesce((extract(epoch FROM t.expires_date) * 1000)::bigint::text, '-') AS expires,
                   coalesce(j.result->'credited'->>'expires_date_ms', '-') AS verdict_expires,
                   j.result->'credited'->>'transaction_id' AS verdict_transaction
            FROM receipt_transactions t JOIN receipt_jobs j ON j.id = t.job_id ORDER BY t.transaction_id
            """
        )
        let expiry = String(Harness.now + 20 * Self.day)
        #expect(rows.rows == [
            ["ar-1", expiry, expiry, "ar-1"], ["coin-1", "-", "-", "coin-1"], ["free-1", "-", "-", "free-1"],
            ["old-1", "-", "-", "old-1"], ["old-2", "-", "-", "old-2"],
        ])
    }

    @Test("three months of one user credited in one batch stack one after another, in purchase order")
    func oneBatch() throws {
        let h = try Self.harness()
        // Listed newest first: the ledger orders them by purchase date.
        _ = try Self.credit(h, [
            ("b-3", "alice", Self.purchase("nr-3", daysAgo: 1)),
            ("b-2", "alice", Self.purchase("nr-2", daysAgo: 2)),
            ("b-1", "alice", Self.purchase("nr-1", daysAgo: 3)),
        ])
        #expect(try Self.period(h, "nr-1") == "00:00:00")
        #expect(try Self.period(h, "nr-2", after: "nr-1") == "00:00:00")
        #expect(try Self.period(h, "nr-3", after: "nr-2") == "00:00:00")
        #expect(try Self.overlaps(h) == "0")
    }

    /// Pairs of periods of one user and product that overlap (a period starts where it was stacked: its end minus
    /// the duration).
    static func overlaps(_ h: Harness) throws -> String? {
        try h.scalar(
            """
            SELECT count(*) FROM receipt_transactions a
            JOIN receipt_transactions b ON b.user_id = a.user_id AND b.product_id = a.product_id AND b.id <> a.id
            WHERE a.expires_date - interval '1 month' < b.expires_date
              AND b.expires_date - interval '1 month' < a.expires_date
            """
        )
    }

    @Test("two transactions crediting one user's months at once: the second waits for the first and stacks on it")
    func concurrentTransactions() throws {
        let h = try Self.harness()
        for order in ["c-1", "c-2"] {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase(order)]), order: order, user: "alice",
                              product: Self.product)
        }
        let jobs = try h.store.claim(worker: "concurrent-test", limit: 10, leaseSeconds: 60)
        try #require(jobs.count == 2)
        let payloads = try jobs.map { job in
            try JobOutcome.jsonArray([
                JobOutcome(
                    lease: job.lease, kind: .verified, appleStatus: 0, environment: .production,
                    candidates: [Self.purchase(job.order.orderId == "c-1" ? "nr-1" : "nr-2", daysAgo: 1)],
                    maxAttempts: 10
                )
            ])
        }
        // The first holds its transaction open after crediting.
        let first = try PostgresConnection(h.databaseURL)
        defer { first.close() }
        _ = try first.query("BEGIN")
        #expect(try first.query("SELECT state FROM receipt_complete($1::jsonb)", [payloads[0]]).rows == [["verified"]])
        // The second, on a thread of its own, must wait for it.
        let url = h.databaseURL
        let second = payloads[1]
        let outcome = ConditionLock<String?>(nil)
        Thread.detachNewThread {
            let text: String
            do {
                let connection = try PostgresConnection(url)
                defer { connection.close() }
                text = try connection.query("SELECT state FROM receipt_complete($1::jsonb)", [second])
                    .rows.map { $0.compactMap { $0 }.joined() }.joined(separator: ",")
            } catch {
                text = "error: \(error)"
            }
            outcome.withLock { $0 = text }
        }
        let waiting = try h.waitUntil(30) {
            try h.scalar(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
                """
            ) == "1"
        }
        #expect(waiting, "the second credit waits on the first's lock")
        #expect(outcome.withLock { $0 } == nil)
        _ = try first.query("COMMIT")
        let result = outcome.wait(for: { $0 }, timeout: .seconds(60))
        #expect(result == "verified")
        #expect(try Self.period(h, "nr-1") == "00:00:00")
        #expect(try Self.period(h, "nr-2", after: "nr-1") == "00:00:00")
        #expect(try Self.overlaps(h) == "0")
    }

    @Test("through the workers: the verdict of a non-renewing purchase carries its computed expiry")
    func throughTheWorkers() throws {
        let h = try Self.harness()
        let bought = Harness.purchase("nr-w", product: Self.product, agoMs: 2 * Self.day)
        let job = try h.enqueue(Harness.receipt(purchases: [bought]), order: "w-1", product: Self.product)
        try h.drain()
        #expect(try h.job(job)["state"] == "verified")
        let row = try h.db.query(
            """
            SELECT (j.result->'credited'->>'expires_date_ms')::bigint AS verdict,
                   (extract(epoch FROM t.purchase_date + interval '1 month') * 1000)::bigint AS expected
            FROM receipt_jobs j JOIN receipt_transactions t ON t.job_id = j.id WHERE j.id = $1
            """,
            [String(job)]
        )
        #expect(row[0, "verdict"] != nil)
        #expect(row[0, "verdict"] == row[0, "expected"])
    }
}
