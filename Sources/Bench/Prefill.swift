import Foundation
import PostgresClient

/// `bench --prefill N` (issue 40): tables that already hold a payments database's history before the run, so that the
/// figures say what a verification costs on a database that has grown, not on empty tables.
///
/// Made by SQL in the database itself (`generate_series`, a chunk of rows per statement), with the spreads of a real
/// history: N finished jobs of `N / 20` customers (twenty orders each) over the past two years (nine in ten verified, the rest rejected;
/// their receipts cleared by retention, 95% delivered), a ledger row and a delivered `credited` event for each verified
/// job, one applied notification per five jobs, and one auto-renewable subscription (with its chain's owner) per
/// twenty. None of it names the run's transactions, orders or customers (their ids carry `prefill-`), so the run's
/// verdicts are what they would be on empty tables. Then VACUUM ANALYZE, as autovacuum keeps a real database.
enum Prefill {
    /// Rows per statement: large enough that the statements' overhead is nothing, small enough to report progress.
    static let chunk = 500_000

    /// Fills the tables of `connection`'s database with `rows` finished jobs and their history; returns the seconds
    /// it took. Triggers are skipped when the role may (a superuser: `session_replication_role`), as a restore would.
    static func fill(_ connection: PostgresConnection, rows: Int, progress: (String) -> Void) throws -> Double {
        guard rows > 0 else { return 0 }
        let started = Date()
        let replica = (try? connection.execute("SET session_replication_role = replica")) != nil
        defer { if replica { _ = try? connection.execute("RESET session_replication_role") } }
        let customers = max(rows / 20, 1)
        var done = 0
        while done < rows {
            let first = done + 1
            let last = min(done + chunk, rows)
            try connection.execute(jobs(first, last, customers: customers))
            try connection.execute(ledger(first, last))
            try connection.execute(notifications(first, last, customers: customers))
            try connection.execute(subscriptions(first, last, customers: customers))
            done = last
            progress("prefill: \(done) of \(rows) jobs and their history (\(Int(Date().timeIntervalSince(started))) s)")
        }
        for table in ["receipt_jobs", "receipt_transactions", "receipt_events", "receipt_notifications",
                      "receipt_subscriptions", "receipt_purchase_owners"] {
            try connection.execute("VACUUM (ANALYZE) \(table)")
        }
        return Date().timeIntervalSince(started)
    }

    /// A job `g` finished `age(g)` ago: ages spread over two years by a multiplicative hash of `g`, so that ids and
    /// dates are not in the same order (as in a table whose jobs were retried, rescued and delivered late).
    static func age(_ g: String) -> String {
        "make_interval(secs => ((\(g)::bigint * 2654435761) % 63072000)::double precision)"
    }

    static func jobs(_ first: Int, _ last: Int, customers: Int) -> String {
        """
        INSERT INTO receipt_jobs (state, kind, bundle_id, order_id, user_id, product_id, transaction_id, receipt_hash,
                                  receipt_bytes, attempts, environment, reason, result, run_at, created_at, updated_at,
                                  finished_at, delivered_at)
        SELECT CASE WHEN g % 10 = 0 THEN 'rejected' ELSE 'verified' END,
               CASE WHEN g % 3 = 0 THEN 'signed_transaction' ELSE 'receipt' END,
               '\(BenchEnvironment.bundleId)', 'prefill-order-' || g, 'prefill-user-' || ((g / 20) % \(customers)),
               'bench.prefill.' || (g % 20), 'prefill-' || g, md5(g::text), 4800, 1, 'Production',
               CASE WHEN g % 10 = 0 THEN 'already_credited' END,
               jsonb_build_object('environment', 'Production', 'credit_key', 'prefill-' || g),
               t, t, t, t, CASE WHEN g % 20 = 0 THEN NULL ELSE t END
        FROM generate_series(\(first), \(last)) AS g, LATERAL (SELECT now() - \(age("g")) AS t) d
        """
    }

    /// The ledger row of each verified job of the chunk (half of them periods of subscription chains of ten), and its
    /// delivered `credited` event.
    static func ledger(_ first: Int, _ last: Int) -> String {
        """
        WITH credited AS (
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              product_id, quantity, bundle_id, order_id, user_id, job_id, purchase_date,
                                              expires_date, credited_at, in_app_ownership_type, price, currency,
                                              storefront)
            SELECT 'Production', j.transaction_id, j.transaction_id,
                   CASE WHEN g % 20 < 10 THEN 'prefill-' || (g - g % 20) ELSE j.transaction_id END,
                   j.product_id, 1, j.bundle_id, j.order_id, j.user_id, j.id, j.created_at,
                   CASE WHEN g % 20 < 10 THEN j.created_at + interval '1 month' END, j.finished_at, 'PURCHASED',
                   0.99 + (g % 5), 'USD', 'USA'
            FROM generate_series(\(first), \(last)) AS g
            JOIN receipt_jobs j ON j.bundle_id = '\(BenchEnvironment.bundleId)' AND j.order_id = 'prefill-order-' || g
                               AND j.state = 'verified'
            RETURNING *
        )
        INSERT INTO receipt_events (kind, user_id, order_id, bundle_id, environment, transaction_id,
                                    original_transaction_id, product_id, effective_at, reason, ledger_id, job_id,
                                    created_at, delivered_at)
        SELECT 'credited', c.user_id, c.order_id, c.bundle_id, c.environment, c.transaction_id,
               c.original_transaction_id, c.product_id, c.purchase_date, 'receipt', c.id, c.job_id, c.credited_at,
               c.credited_at
        FROM credited c
        """
    }

    static func notifications(_ first: Int, _ last: Int, customers: Int) -> String {
        """
        INSERT INTO receipt_notifications (state, source, signed_payload, payload_hash, attempts, notification_uuid,
                                           notification_type, subtype, environment, bundle_id, signed_at, transaction_id,
                                           original_transaction_id, product_id, user_id, run_at, received_at,
                                           updated_at, finished_at)
        SELECT 'applied', 'receiver', 'prefill.' || md5(g::text) || repeat('x', 200), md5('prefill-' || g), 1,
               md5('notification-' || g)::uuid, 'DID_RENEW', NULL, 'Production', '\(BenchEnvironment.bundleId)', t,
               'prefill-' || g, 'prefill-' || (g - g % 20), 'bench.prefill.' || (g % 20),
               'prefill-user-' || ((g / 20) % \(customers)), t, t, t, t
        FROM generate_series(\(first), \(last)) AS g, LATERAL (SELECT now() - \(age("g")) AS t) d
        WHERE g % 5 = 0
        """
    }

    static func subscriptions(_ first: Int, _ last: Int, customers: Int) -> String {
        """
        WITH chains AS (
            SELECT 'prefill-' || g AS original, 'prefill-user-' || ((g / 20) % \(customers)) AS user_id,
                   now() - \(age("g")) + interval '1 month' AS expires
            FROM generate_series(\(first), \(last)) AS g
            WHERE g % 20 = 0
        ), owners AS (
            INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id)
            SELECT 'Production', c.original, c.user_id FROM chains c
        )
        INSERT INTO receipt_subscriptions (environment, original_transaction_id, bundle_id, product_id, user_id, status,
                                           expires_at, auto_renew, signed_at)
        SELECT 'Production', c.original, '\(BenchEnvironment.bundleId)', 'bench.prefill.sub',
               c.user_id, CASE WHEN c.expires > now() THEN 'active' ELSE 'expired' END, c.expires, c.expires > now(),
               c.expires - interval '1 month'
        FROM chains c
        """
    }
}
