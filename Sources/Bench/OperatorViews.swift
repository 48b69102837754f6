import Foundation
import PostgresClient
import ThreadSupport

/// What an operator opens, timed after a run (issue 40: views an operator opens must answer in under a second,
/// whatever the tables hold). Each statement as `status` or docs/operations.md runs it; read once to warm the cache,
/// then timed as the fastest of three reads.
public enum OperatorViews {
    public struct Timing: Sendable, Codable, Hashable {
        public var name: String
        public var milliseconds: Double
    }

    static let statements: [(name: String, sql: String)] = [
        ("queue summary", "SELECT * FROM receipt_queue_summary"),
        ("failures", "SELECT * FROM receipt_failures LIMIT 15"),
        ("notifications summary", "SELECT * FROM receipt_notifications_summary ORDER BY 1"),
        ("stuck jobs", "SELECT problem, count(*), min(id) FROM receipt_jobs_stuck GROUP BY problem ORDER BY 1"),
        ("a customer's entitlements", "SELECT * FROM receipt_entitlements WHERE user_id = 'prefill-user-7'"),
        ("revenue, last 30 days", "SELECT * FROM receipt_revenue WHERE day >= current_date - 30"),
        ("refund summary", "SELECT * FROM receipt_refund_summary"),
        ("retention", "SELECT * FROM receipt_retention"),
        ("price mismatches", "SELECT * FROM receipt_price_mismatches LIMIT 100"),
        ("unclaimed purchases", "SELECT * FROM receipt_unclaimed_purchases ORDER BY first_seen LIMIT 100"),
    ]

    static func time(_ connection: PostgresConnection) throws -> [Timing] {
        try statements.map { statement in
            _ = try connection.query(statement.sql)
            var best = Double.infinity
            for _ in 0..<3 {
                let started = ContinuousClock.now
                _ = try connection.query(statement.sql)
                best = min(best, (ContinuousClock.now - started).seconds * 1000)
            }
            return Timing(name: statement.name, milliseconds: best)
        }
    }
}
