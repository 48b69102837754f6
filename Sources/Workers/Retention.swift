/// How long finished jobs keep their receipt and their row, and how long rejected forgeries are kept
/// (`receipt_prune`). The ledger is never pruned.
public struct Retention: Sendable, Hashable {
    /// The period that stands for "never": 100 years, for a half of retention that is not set.
    public static let neverDays: Double = 36_500
    /// How long a rejected forgery (a notification whose signature did not hold) is kept by default.
    public static let forgeryDays: Double = 7

    /// Seconds after a job finished before its `receipt_data` is cleared (its hash stays).
    public var clearReceiptsAfterSeconds: Double
    /// Seconds after a delivered verdict finished before its job is deleted (and delivered events; finished
    /// notifications after at least 180 days).
    public var deleteAfterSeconds: Double
    /// Seconds after a forgery was rejected (a notification rejected `invalid_signature`) before its row is deleted;
    /// nil keeps forgeries as long as other rejected notifications.
    public var deleteForgeriesAfterSeconds: Double?

    /// Periods in days; nil for the first two: never (`neverDays`); nil for forgeries: as other rejected
    /// notifications.
    public init(clearReceiptsAfterDays: Double?, deleteAfterDays: Double?, deleteForgeriesAfterDays: Double? = forgeryDays) {
        clearReceiptsAfterSeconds = (clearReceiptsAfterDays ?? Self.neverDays) * 86_400
        deleteAfterSeconds = (deleteAfterDays ?? Self.neverDays) * 86_400
        deleteForgeriesAfterSeconds = deleteForgeriesAfterDays.map { $0 * 86_400 }
    }

    /// Only forgeries are pruned (after `forgeryDays`): what a worker does when no other retention is set.
    public static let forgeriesOnly = Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil)
}
