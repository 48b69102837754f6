import ReceiptQueue

/// How long each kind of row is kept (`receipt_prune`): finished jobs' receipts and rows, delivered events, finished
/// notifications, rejected forgeries, settled refund requests (with the consumption records nothing needs any more).
/// What is still needed is never deleted: unfinished, dead or undelivered jobs, undelivered events, unfinished or dead
/// notifications, pending refund requests, customers' consents, and the ledger.
public struct Retention: Sendable, Hashable {
    /// The period that stands for "never": 100 years, for a kind whose retention is not set.
    public static let neverDays: Double = 36_500
    /// How long a rejected forgery (a notification whose signature did not hold) is kept by default.
    public static let forgeryDays: Double = 7
    /// The shortest period finished notifications and settled refund requests are kept, whatever is set: Apple's
    /// Notification History reaches 180 days back, and a replayed notification must find its row.
    public static let minimumHistoryDays: Double = 180

    /// Seconds after a job finished before its `receipt_data` is cleared (its hash stays).
    public var clearReceiptsAfterSeconds: Double
    /// Seconds after a delivered verdict finished before its job is deleted.
    public var deleteAfterSeconds: Double
    /// Seconds after a delivered event was made before it is deleted.
    public var deleteEventsAfterSeconds: Double
    /// Seconds after a notification finished (applied, duplicate, rejected) before it is deleted; the database keeps
    /// it `minimumHistoryDays` at least.
    public var deleteNotificationsAfterSeconds: Double
    /// Seconds after a forgery was rejected (a notification rejected `invalid_signature`) before its row is deleted;
    /// nil keeps forgeries as long as other rejected notifications.
    public var deleteForgeriesAfterSeconds: Double?
    /// Seconds after a settled refund request's deadline (`respond_by`) before it is deleted, and after a consumption
    /// record's last change before it is (once no refund request of its transaction is kept); the database keeps
    /// them `minimumHistoryDays` at least.
    public var deleteRefundRequestsAfterSeconds: Double

    /// Periods in days. nil for the first two: never (`neverDays`); nil for forgeries: as other rejected
    /// notifications; nil for events, notifications and refund requests: `deleteAfterDays`'s period.
    public init(
        clearReceiptsAfterDays: Double?, deleteAfterDays: Double?, deleteForgeriesAfterDays: Double? = forgeryDays,
        deleteEventsAfterDays: Double? = nil, deleteNotificationsAfterDays: Double? = nil,
        deleteRefundRequestsAfterDays: Double? = nil
    ) {
        let deleteDays = deleteAfterDays ?? Self.neverDays
        clearReceiptsAfterSeconds = (clearReceiptsAfterDays ?? Self.neverDays) * 86_400
        deleteAfterSeconds = deleteDays * 86_400
        deleteForgeriesAfterSeconds = deleteForgeriesAfterDays.map { $0 * 86_400 }
        deleteEventsAfterSeconds = (deleteEventsAfterDays ?? deleteDays) * 86_400
        deleteNotificationsAfterSeconds = (deleteNotificationsAfterDays ?? deleteDays) * 86_400
        deleteRefundRequestsAfterSeconds = (deleteRefundRequestsAfterDays ?? deleteDays) * 86_400
    }

    /// Only forgeries are pruned (after `forgeryDays`): what a worker does when no other retention is set.
    public static let forgeriesOnly = Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil)

    /// Whether anything besides forgeries is ever deleted.
    public var deletesMoreThanForgeries: Bool {
        let never = Self.neverDays * 86_400
        return [clearReceiptsAfterSeconds, deleteAfterSeconds, deleteEventsAfterSeconds,
                deleteNotificationsAfterSeconds, deleteRefundRequestsAfterSeconds].contains { $0 < never }
    }
}

extension JobStore {
    /// One retention batch with `retention`'s periods; returns the rows cleared or deleted (0 when nothing is left).
    public func prune(_ retention: Retention, batch: Int = 5000) throws -> Int {
        try prune(
            clearReceiptsAfterSeconds: retention.clearReceiptsAfterSeconds,
            deleteAfterSeconds: retention.deleteAfterSeconds,
            deleteForgeriesAfterSeconds: retention.deleteForgeriesAfterSeconds,
            deleteEventsAfterSeconds: retention.deleteEventsAfterSeconds,
            deleteNotificationsAfterSeconds: retention.deleteNotificationsAfterSeconds,
            deleteRefundRequestsAfterSeconds: retention.deleteRefundRequestsAfterSeconds,
            batch: batch
        )
    }
}
