/// What Apple's report fetch gave: the day's in-app purchase lines, or not yet (Apple answers 404 until the day's
/// report is ready), with Apple's words.
public enum ReportFetch: Sendable {
    case lines([Reconciliation.AppleLine])
    case notReady(String)
}

/// `work`'s own reconciliation (`RECONCILE_AT`): each day, from `at` in Apple's zone (Pacific Time, the zone of the
/// report days), yesterday's report fetched and compared with the ledger, once across all workers
/// (`receipt_reconciliation_claim()`); a report not ready yet is asked for again every `retrySeconds`, at most
/// `maxAttempts` times a day.
public struct ReconcileSchedule: Sendable {
    /// The time of day, HH:MM (24 hours), in America/Los_Angeles.
    public var at: String
    /// Fetches the report of a day (YYYY-MM-DD): the App Store Connect API client, wired by the executable.
    public var fetch: @Sendable (_ reportDate: String) throws -> ReportFetch
    /// How long a day waits after Apple said its report is not ready, or after a failure.
    public var retrySeconds: Double = 1800
    /// Attempts per day at most (12 every 30 minutes: six hours after `at`).
    public var maxAttempts = 12
    /// How long a worker holds the day while it fetches and compares (another worker takes it over after that).
    public var leaseSeconds: Double = 600
    /// How often a worker asks whether the day is due.
    public var checkEverySeconds: Double = 60

    public init(at: String, fetch: @escaping @Sendable (_ reportDate: String) throws -> ReportFetch) {
        self.at = at
        self.fetch = fetch
    }

    /// `text` as a time of day HH:MM (00:00-23:59), or nil.
    public static func timeOfDay(_ text: String) -> String? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let twoDigits = { (part: Substring) in part.utf8.count == 2 && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard parts.count == 2, parts.allSatisfy(twoDigits), let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return text
    }
}
