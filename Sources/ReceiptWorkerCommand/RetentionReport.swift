import ConsoleOutput
import PostgresClient
import Workers

/// `status`'s "What is kept how long": per kind of row, the period in effect (the RETENTION_* settings as `work` reads
/// them from this environment), the oldest row retention may delete and its age (view receipt_retention), and what
/// is never deleted. An oldest row older than its period means retention is not running where it should.
enum RetentionReport {
    static func render(_ connection: PostgresConnection, _ retention: Retention?) -> String {
        let rows: [[String?]]
        do {
            rows = try connection.query(
                """
                SELECT kind, table_name, coalesce(to_char(oldest, 'YYYY-MM-DD HH24:MI:SS'), '-') AS oldest,
                       coalesce(date_trunc('second', oldest_age)::text, '-') AS oldest_age,
                       coalesce(never_deleted, '-') AS never_deleted
                FROM receipt_retention
                """
            ).rows
        } catch {
            // A database migrated before roles.sql was applied again: say so, and let the rest of status show.
            return "  receipt_retention cannot be read (\(error)); apply deploy/sql/roles.sql again as the owner"
        }
        let table = TextTable(
            ["kind", "table", "deleted after", "oldest deletable", "age", "never deleted"],
            rows.map { row in
                let kind = row[0] ?? ""
                return [kind, row[1] ?? "", period(kind, retention), row[2] ?? "", row[3] ?? "", row[4] ?? ""]
            }
        )
        return table.render()
    }

    /// The period in effect for one kind of the view, as receipt_prune applies it (`Retention.periodSeconds`: 180
    /// days at least for notifications, refund requests and consumption records).
    static func period(_ kind: String, _ retention: Retention?) -> String {
        // The view writes "refund requests"; the metrics' label, `refund_requests`.
        guard let seconds = retention?.periodSeconds(kind == "refund requests" ? "refund_requests" : kind) else {
            return "never"
        }
        let days = seconds / 86_400
        if let whole = Int(exactly: days) { return whole == 1 ? "1 day" : "\(whole) days" }
        return "\(days) days"
    }
}
