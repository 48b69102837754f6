import ArgumentParser
import ConsoleOutput
import PostgresClient
import ReceiptQueue

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the queue: jobs per state, oldest waiting, retry backlog, recent failures, notifications, stuck jobs, "
            + "what is kept how long."
    )

    func run() throws {
        let settings = Settings()
        let connection = try connect(try settings.databaseURL(as: .operator))
        let schema = try DatabaseCheck.requireSchema(connection, environment: settings.environment)
        // First, so it is not missed: who besides the owner may plant objects beside the SECURITY DEFINER functions.
        if let warning = Migrator.schemaCreatorsWarning(try Migrator.schemaCreators(connection)) {
            print(TerminalText.message(warning) + "\n")
        }
        let summary = try connection.query(
            """
            SELECT state, jobs, coalesce(oldest_age::text, '-') AS oldest, undelivered,
                   coalesce(to_char(next_run_at, 'YYYY-MM-DD HH24:MI:SS'), '-') AS next_run
            FROM receipt_queue_summary
            """
        )
        print("Jobs by state")
        print(TextTable(["state", "jobs", "oldest", "undelivered", "next run"], summary.rows.map { row in
            row.map { $0 ?? "" }
        }).render())

        let failures = try connection.query(
            """
            SELECT state, reason, coalesce(apple_status::text, '-') AS apple_status, jobs, latest_id,
                   left(coalesce(latest_error, '-'), 70) AS latest_error
            FROM receipt_failures LIMIT 15
            """
        )
        print("\nFailures, last 24 hours")
        if failures.isEmpty {
            print("  none")
        } else {
            print(TextTable(["state", "reason", "apple", "jobs", "latest job", "latest error"], failures.rows.map { row in
                row.map { $0 ?? "" }
            }).render())
        }

        let notifications = try connection.query(
            """
            SELECT state, notifications, coalesce(date_trunc('second', oldest_age)::text, '-') AS oldest,
                   coalesce(to_char(next_run_at, 'YYYY-MM-DD HH24:MI:SS'), '-') AS next_run,
                   left(coalesce(latest_error, '-'), 60) AS latest_error
            FROM receipt_notifications_summary ORDER BY 1
            """
        )
        print("\nApp Store Server Notifications (table receipt_notifications)")
        print(TextTable(["state", "count", "oldest", "next run", "latest error"], notifications.rows.map { row in
            row.map { $0 ?? "" }
        }).render())

        let checks = try connection.query(
            """
            SELECT environment, bundle_id,
                   coalesce(to_char(max(finished_at) FILTER (WHERE result = 'passed'), 'YYYY-MM-DD HH24:MI:SS'),
                            'never') AS last_passed,
                   coalesce(to_char(max(finished_at) FILTER (WHERE result <> 'passed'), 'YYYY-MM-DD HH24:MI:SS'),
                            '-') AS last_failed,
                   coalesce((array_agg(result || coalesce(' (' || send_attempt_result || ')', '')
                                       ORDER BY finished_at DESC) FILTER (WHERE result <> 'passed'))[1], '-') AS step
            FROM receipt_notification_tests GROUP BY 1, 2 ORDER BY 1, 2
            """
        )
        print("\nNotifications set-up check (receipt-worker notifications test; table receipt_notification_tests)")
        if checks.isEmpty {
            print("  never run")
        } else {
            print(TextTable(["environment", "app", "last passed", "last failed", "failed at"], checks.rows.map { row in
                row.map { $0 ?? "" }
            }).render())
        }

        let stuck = try connection.query(
            "SELECT problem, count(*) AS jobs, min(id) AS first_id FROM receipt_jobs_stuck GROUP BY problem ORDER BY 1"
        )
        print("\nNeeds attention (table receipt_jobs_stuck)")
        if stuck.isEmpty {
            print("  nothing")
        } else {
            print(TextTable(["problem", "jobs", "first job"], stuck.rows.map { row in row.map { $0 ?? "" } }).render())
        }
        print("\nWhat is kept how long (view receipt_retention; periods: the RETENTION_* settings of this environment)")
        do {
            print(RetentionReport.render(connection, try settings.retention()))
        } catch {
            print("  " + TerminalText.message(String(describing: error)))
        }
        print("\nreceipt-worker \(Version.current); schema: \(schema)")
    }
}
