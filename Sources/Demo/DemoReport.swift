import FakeAppStore
import ConsoleOutput
import Foundation
import PostgresClient

/// The demo's tables, read back from the database: the verdict of each sample order, the ledger rows they credited,
/// and one closing line with totals.
struct DemoReport {
    let connection: PostgresConnection
    let jobs: [(order: DemoOrder, id: Int64)]

    private var ids: String { Self.idArray(jobs.map(\.id)) }

    /// Jobs per state among `ids`.
    static func stateCounts(_ ids: [Int64], connection: PostgresConnection) throws -> [String: Int] {
        let result = try connection.query(
            "SELECT state, count(*) AS n FROM receipt_jobs WHERE id = ANY($1::bigint[]) GROUP BY state", [idArray(ids)]
        )
        var counts: [String: Int] = [:]
        for index in result.rows.indices {
            counts[result[index, "state"] ?? ""] = Int(result.int64(index, "n") ?? 0)
        }
        return counts
    }

    /// One row per order: who, what, the verdict, Apple's environment, attempts, and enqueue-to-verdict time.
    func verdicts() throws -> String {
        let result = try connection.query(
            """
            SELECT id, order_id, user_id, product_id, state, coalesce(reason, '-') AS reason,
                   coalesce(environment, '-') AS environment, attempts,
                   coalesce(round(extract(epoch FROM finished_at - created_at) * 1000)::bigint || ' ms', '-') AS took
            FROM receipt_jobs WHERE id = ANY($1::bigint[]) ORDER BY id
            """,
            [ids]
        )
        let scenarios = Dictionary(uniqueKeysWithValues: jobs.map { (String($0.id), $0.order.scenario) })
        let rows = result.rows.indices.map { index in
            [
                result[index, "order_id"], scenarios[result[index, "id"] ?? ""], result[index, "user_id"],
                result[index, "product_id"], result[index, "state"], result[index, "reason"],
                result[index, "environment"], result[index, "attempts"], result[index, "took"],
            ].map { $0 ?? "" }
        }
        let table = TextTable(
            ["order", "what it shows", "user", "product", "state", "reason", "environment", "attempts", "took"],
            rows
        )
        return "Verdicts (table receipt_jobs; took: from enqueue to verdict)\n" + table.render()
    }

    /// The ledger rows the demo's orders credited: each purchase once, with the environment finance filters on.
    func ledger() throws -> String {
        let result = try connection.query(
            """
            SELECT transaction_id, environment, product_id, order_id, user_id,
                   to_char(purchase_date AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS purchased,
                   coalesce(to_char(expires_date AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), '-') AS expires,
                   coalesce(revocation_reason, CASE WHEN revoked_at IS NULL THEN '-' ELSE 'revoked' END) AS revoked
            FROM receipt_transactions WHERE job_id = ANY($1::bigint[]) ORDER BY id
            """,
            [ids]
        )
        let table = TextTable(
            ["transaction", "environment", "product", "order", "user", "purchased (UTC)", "expires (UTC)", "revoked"],
            result.rows.map { row in row.map { $0 ?? "" } }
        )
        return "Ledger (table receipt_transactions): every purchase credited at most once\n" + table.render()
    }

    /// The orders whose verdict is not the one the demo expects, described.
    func unexpected() throws -> [String] {
        let result = try connection.query(
            "SELECT id, state, reason, environment FROM receipt_jobs WHERE id = ANY($1::bigint[])", [ids]
        )
        var found: [Int64: DemoOrder.Expected] = [:]
        for index in result.rows.indices {
            guard let id = result.int64(index, "id") else { continue }
            found[id] = DemoOrder.Expected(
                state: result[index, "state"] ?? "", reason: result[index, "reason"],
                environment: result[index, "environment"]
            )
        }
        return jobs.compactMap { order, id in
            let actual = found[id]
            guard actual != order.expected else { return nil }
            let got = actual?.description ?? "no job"
            return "\(order.orderId) (\(order.scenario)): expected \(order.expected), got \(got)"
        }
    }

    /// "Totals: 9 orders, 3 verified, 6 rejected, all as expected; 12 Apple calls (1 sandbox), 3 failed and were
    /// retried; 4.5 s."
    func totals(elapsedSeconds: Double, stats: FakeAppStoreStats, unexpected: Int) throws -> String {
        let states = try Self.stateCounts(jobs.map(\.id), connection: connection)
        let verdicts = ["verified", "rejected", "dead", "retry", "queued", "running"]
            .compactMap { state in states[state].map { "\($0) \(state)" } }
        let failed = stats.statuses.values.flatMap { $0 }
            .filter { !["0", "21007", "21008"].contains($0.key) }
            .map(\.value).reduce(0, +)
        let check = unexpected == 0 ? "all as expected" : "\(unexpected) NOT as expected"
        return "Totals: \(jobs.count) orders, \(verdicts.joined(separator: ", ")), \(check); "
            + "\(stats.total) Apple calls (\(stats.requests["sandbox"] ?? 0) sandbox), "
            + "\(failed) failed and were retried; "
            + String(format: "%.1f s.", elapsedSeconds)
    }

    /// A PostgreSQL array literal of job ids, for `= ANY($1::bigint[])`.
    private static func idArray(_ ids: [Int64]) -> String {
        "{" + ids.map(String.init).joined(separator: ",") + "}"
    }
}
