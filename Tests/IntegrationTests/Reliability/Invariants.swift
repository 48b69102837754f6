import Foundation
import PostgresClient
import Testing

/// The promises, checked in SQL after every reliability scenario: every job final (or legitimately waiting),
/// nothing lost, each purchase credited at most once, each ledger row backed by the verified job that made it.
enum Invariants {
    /// What a scenario came to, for the assertions that follow and for the report.
    struct Report: CustomStringConvertible {
        var jobs = 0
        var states: [String: Int] = [:]
        var reasons: [String: Int] = [:]
        var ledgerRows = 0
        var rescues = 0
        var attempts = 0

        func count(_ state: String) -> Int { states[state, default: 0] }
        func count(reason: String) -> Int { reasons[reason, default: 0] }

        var description: String {
            "jobs \(jobs), states \(states.sorted { $0.key < $1.key }), reasons \(reasons.sorted { $0.key < $1.key }), "
                + "ledger rows \(ledgerRows), rescues \(rescues), attempts \(attempts)"
        }
    }

    /// Runs every check against `db` and records a test issue for each violation.
    ///
    /// - Parameters:
    ///   - enqueued: how many distinct jobs the scenario created; the table must hold exactly that many.
    ///   - allowWaiting: jobs may still be queued or in retry (a scenario that stops before the end); a sweep is
    ///     run first, after which no job may be running past its lease.
    @discardableResult
    static func check(
        _ db: PostgresConnection, enqueued: Int?, allowWaiting: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Report {
        func rows(_ sql: String) throws -> [[String?]] { try db.query(sql).rows }
        func expectNone(_ what: String, _ sql: String) throws {
            let found = try rows(sql)
            #expect(found.isEmpty, "\(what): \(found.prefix(10))", sourceLocation: sourceLocation)
        }

        if allowWaiting {
            _ = try db.query("SELECT * FROM receipt_sweep(2147483647)")
            try expectNone(
                "jobs running past their lease after a sweep",
                "SELECT id, locked_by, lease_until FROM receipt_jobs WHERE state = 'running' AND lease_until < now()"
            )
            try expectNone(
                "jobs neither final nor waiting",
                "SELECT id, state FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead', 'queued', 'retry', 'running')"
            )
        } else {
            try expectNone(
                "jobs not final",
                "SELECT id, state, attempts, last_error FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead')"
            )
        }

        // A final state is complete and holds no lease; a waiting one has no verdict.
        try expectNone(
            "final jobs without finished_at, or still holding a lease",
            """
            SELECT id, state FROM receipt_jobs WHERE state IN ('verified', 'rejected', 'dead')
              AND (finished_at IS NULL OR lease_token IS NOT NULL OR locked_by IS NOT NULL OR lease_until IS NOT NULL)
            """
        )
        try expectNone(
            "unfinished jobs with finished_at",
            "SELECT id, state FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead') AND finished_at IS NOT NULL"
        )
        try expectNone(
            "reasons inconsistent with states",
            """
            SELECT id, state, reason FROM receipt_jobs
            WHERE (state = 'rejected' AND reason IS NULL) OR (state = 'dead' AND reason IS DISTINCT FROM 'retries_exhausted')
               OR (state = 'verified' AND reason IS NOT NULL)
            """
        )

        // Each purchase credited at most once (the unique index says so; checked anyway, with the catalog).
        try expectNone(
            "a credit key credited twice",
            "SELECT environment, credit_key, count(*) FROM receipt_transactions GROUP BY 1, 2 HAVING count(*) > 1"
        )
        try expectNone(
            "a transaction in two ledger rows of one environment that the catalog does not explain",
            """
            SELECT t.environment, t.transaction_id, count(*) FROM receipt_transactions t
            LEFT JOIN receipt_products p ON p.product_id = t.product_id
            GROUP BY 1, 2
            HAVING count(*) > 1 AND bool_or(p.kind IS NULL OR p.kind NOT IN ('non_consumable', 'auto_renewable'))
            """
        )
        try expectNone(
            "ledger rows whose credit key is not the catalog's key for the purchase",
            """
            SELECT t.id, t.credit_key, t.product_id, p.kind FROM receipt_transactions t
            LEFT JOIN receipt_products p ON p.product_id = t.product_id
            WHERE t.credit_key IS DISTINCT FROM
                  receipt_credit_key(p.kind, t.transaction_id, t.original_transaction_id, t.web_order_line_item_id)
            """
        )
        try expectNone(
            "an order credited twice",
            "SELECT bundle_id, order_id, count(*) FROM receipt_transactions GROUP BY 1, 2 HAVING count(*) > 1"
        )

        // Every ledger row was made by a verified job of the same order, app and user, and the other way round.
        try expectNone(
            "ledger rows not tied to a verified job of the same order",
            """
            SELECT t.id, t.job_id, j.state, t.order_id, j.order_id FROM receipt_transactions t
            LEFT JOIN receipt_jobs j ON j.id = t.job_id
            WHERE j.id IS NULL OR j.state <> 'verified' OR j.order_id <> t.order_id OR j.bundle_id <> t.bundle_id
               OR j.user_id <> t.user_id
            """
        )
        try expectNone(
            "verified jobs without a ledger row for their order",
            """
            SELECT j.id, j.order_id FROM receipt_jobs j
            WHERE j.state = 'verified' AND NOT EXISTS (
                SELECT 1 FROM receipt_transactions t
                WHERE t.bundle_id = j.bundle_id AND t.order_id = j.order_id AND t.credit_key = j.result->>'credit_key')
            """
        )
        try expectNone(
            "two verified jobs for one order",
            "SELECT bundle_id, order_id FROM receipt_jobs WHERE state = 'verified' GROUP BY 1, 2 HAVING count(*) > 1"
        )
        try expectNone(
            "ledger rows credited to a user who does not own the purchase chain",
            """
            SELECT t.id, t.user_id, o.user_id FROM receipt_transactions t
            JOIN receipt_purchase_owners o
              ON o.environment = t.environment AND o.original_transaction_id = t.original_transaction_id
            WHERE o.user_id <> t.user_id
            """
        )

        var report = Report()
        for row in try rows("SELECT state, count(*)::text FROM receipt_jobs GROUP BY 1") {
            report.states[row[0] ?? "?"] = Int(row[1] ?? "") ?? 0
        }
        for row in try rows("SELECT reason, count(*)::text FROM receipt_jobs WHERE reason IS NOT NULL GROUP BY 1") {
            report.reasons[row[0] ?? "?"] = Int(row[1] ?? "") ?? 0
        }
        let totals = try rows(
            """
            SELECT count(*)::text, coalesce(sum(rescues), 0)::text, coalesce(sum(attempts), 0)::text,
                   (SELECT count(*) FROM receipt_transactions)::text
            FROM receipt_jobs
            """
        )
        report.jobs = Int(totals.first?[0] ?? "") ?? -1
        report.rescues = Int(totals.first?[1] ?? "") ?? -1
        report.attempts = Int(totals.first?[2] ?? "") ?? -1
        report.ledgerRows = Int(totals.first?[3] ?? "") ?? -1
        if let enqueued {
            #expect(report.jobs == enqueued, "jobs in the table vs enqueued (lost or invented)", sourceLocation: sourceLocation)
        }
        return report
    }
}
