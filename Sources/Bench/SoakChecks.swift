import PostgresClient

/// What `bench --soak` finds in the database once everything is final: every job final, one ledger row per verified
/// job and none for another, every notification final and each applied one credited once.
public struct SoakChecks: Sendable, Codable, Equatable {
    public var jobs: Int
    public var jobsFinal: Int
    public var verified: Int
    public var rejected: Int
    public var dead: Int
    /// Ledger rows of the run's orders, the jobs they name, and those naming a job that is not verified.
    public var ledgerRows: Int
    public var ledgerJobs: Int
    public var ledgerRowsOfUnverifiedJobs: Int
    public var notifications: Int
    public var notificationsFinal: Int
    public var notificationsApplied: Int
    /// Ledger rows of the notifications' purchases (a renewal's period, an announced charge).
    public var notificationCredits: Int

    /// Every job final, the ledger one row per verified job (no double credit, none for a rejected or dead job),
    /// every notification final, and one credit per notification applied.
    public var exactlyOnce: Bool {
        jobsFinal == jobs && ledgerRows == verified && ledgerJobs == verified && ledgerRowsOfUnverifiedJobs == 0
            && notificationsFinal == notifications && notificationCredits == notificationsApplied
    }

    /// Reads the figures of the run whose orders are `order-<tag>-…`, whose notifications are those after
    /// `notificationsAfter` (an id), and whose notifications' purchases' transaction ids start with one of
    /// `purchasePrefixes`.
    static func read(
        _ connection: PostgresConnection, tag: String, notificationsAfter: Int64, purchasePrefixes: [String]
    ) throws -> SoakChecks {
        let orders = "order-\(tag)-%"
        let jobs = try connection.query(
            """
            SELECT count(*) AS jobs,
                   count(*) FILTER (WHERE state IN ('verified', 'rejected', 'dead')) AS final,
                   count(*) FILTER (WHERE state = 'verified') AS verified,
                   count(*) FILTER (WHERE state = 'rejected') AS rejected,
                   count(*) FILTER (WHERE state = 'dead') AS dead
            FROM receipt_jobs WHERE bundle_id = $1 AND order_id LIKE $2
            """,
            [BenchEnvironment.bundleId, orders]
        )
        let ledger = try connection.query(
            """
            SELECT count(*) AS n, count(DISTINCT t.job_id) AS jobs,
                   count(*) FILTER (WHERE j.state IS DISTINCT FROM 'verified') AS stray
            FROM receipt_transactions t LEFT JOIN receipt_jobs j ON j.id = t.job_id
            WHERE t.bundle_id = $1 AND t.order_id LIKE $2
            """,
            [BenchEnvironment.bundleId, orders]
        )
        let notifications = try connection.query(
            """
            SELECT count(*) AS n, count(*) FILTER (WHERE state NOT IN ('queued', 'running', 'retry')) AS final,
                   count(*) FILTER (WHERE state = 'applied') AS applied
            FROM receipt_notifications WHERE id > $1
            """,
            [String(notificationsAfter)]
        )
        let credits = try connection.query(
            "SELECT count(*) AS n FROM receipt_transactions WHERE transaction_id LIKE ANY ($1::text[])",
            [BenchEnqueuer.arrayLiteral(purchasePrefixes.map { $0 + "%" })]
        )
        func count(_ result: PostgresResult, _ column: String) -> Int { Int(result.int64(0, column) ?? 0) }
        return SoakChecks(
            jobs: count(jobs, "jobs"), jobsFinal: count(jobs, "final"), verified: count(jobs, "verified"),
            rejected: count(jobs, "rejected"), dead: count(jobs, "dead"), ledgerRows: count(ledger, "n"),
            ledgerJobs: count(ledger, "jobs"), ledgerRowsOfUnverifiedJobs: count(ledger, "stray"),
            notifications: count(notifications, "n"), notificationsFinal: count(notifications, "final"),
            notificationsApplied: count(notifications, "applied"), notificationCredits: count(credits, "n")
        )
    }

    var text: [(String, String)] {
        [
            ("jobs", "\(jobs): final \(jobsFinal) (verified \(verified), rejected \(rejected), dead \(dead))"),
            ("ledger", "\(ledgerRows) rows for \(ledgerJobs) jobs, \(ledgerRowsOfUnverifiedJobs) of a job not "
                + "verified"),
            ("notifications", "\(notifications): final \(notificationsFinal), applied \(notificationsApplied); "
                + "\(notificationCredits) credited"),
            ("exactly once", exactlyOnce
                ? "yes: every job final, one ledger row per verified job, one credit per notification applied"
                : "NO: see the figures above"),
        ]
    }
}
