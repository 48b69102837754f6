/// How long finished jobs keep their receipt and their row (`receipt_prune`). The ledger is never pruned.
public struct Retention: Sendable, Hashable {
    /// The period that stands for "never": 100 years, for a half of retention that is not set.
    public static let neverDays: Double = 36_500

    /// Seconds after a job finished before its `receipt_data` is cleared (its hash stays).
    public var clearReceiptsAfterSeconds: Double
    /// Seconds after a delivered verdict finished before its job is deleted.
    public var deleteAfterSeconds: Double

    /// Periods in days; nil for either: never (`neverDays`).
    public init(clearReceiptsAfterDays: Double?, deleteAfterDays: Double?) {
        clearReceiptsAfterSeconds = (clearReceiptsAfterDays ?? Self.neverDays) * 86_400
        deleteAfterSeconds = (deleteAfterDays ?? Self.neverDays) * 86_400
    }
}
