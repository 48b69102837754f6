import Workers

/// `sweep`'s retention flags, in days; nil: not given (the environment variable, then the default, decides).
struct RetentionFlags {
    var clearReceiptsAfterDays: Double?
    var deleteAfterDays: Double?
    var deleteForgeriesAfterDays: Double?
    var deleteEventsAfterDays: Double?
    var deleteNotificationsAfterDays: Double?
    var deleteRefundRequestsAfterDays: Double?

    /// Whether any retention flag was given (`sweep` prunes only then).
    var anyGiven: Bool {
        [clearReceiptsAfterDays, deleteAfterDays, deleteForgeriesAfterDays, deleteEventsAfterDays,
         deleteNotificationsAfterDays, deleteRefundRequestsAfterDays].contains { $0 != nil }
    }
}

extension Settings {
    /// The retention settings, in the order `docs/configuration.md` lists them.
    static let retentionSettings = [
        "RETENTION_CLEAR_RECEIPTS_DAYS", "RETENTION_DELETE_DAYS", "RETENTION_EVENTS_DAYS",
        "RETENTION_NOTIFICATIONS_DAYS", "RETENTION_FORGERY_DAYS", "RETENTION_REFUND_REQUESTS_DAYS",
    ]

    /// Retention as `work` and `sweep` read it: each period from its flag, else its environment variable, in days.
    ///   RETENTION_CLEAR_RECEIPTS_DAYS, RETENTION_DELETE_DAYS  unset or 0: never
    ///   RETENTION_FORGERY_DAYS                               unset: 7; 0: as other rejected notifications
    ///   RETENTION_EVENTS_DAYS, RETENTION_NOTIFICATIONS_DAYS,
    ///   RETENTION_REFUND_REQUESTS_DAYS                       unset: RETENTION_DELETE_DAYS's period; 0: never
    /// Notifications and refund requests are kept 180 days at least: a period set below that is refused (the
    /// umbrella RETENTION_DELETE_DAYS may be shorter; the database then keeps them 180 days). nil: nothing is deleted.
    func retention(_ flags: RetentionFlags = RetentionFlags()) throws -> Retention? {
        let clear = try retentionDays(
            "RETENTION_CLEAR_RECEIPTS_DAYS", "clear-receipts-after-days", flags.clearReceiptsAfterDays
        )
        let delete = try retentionDays("RETENTION_DELETE_DAYS", "delete-after-days", flags.deleteAfterDays)
        let forgeries = try retentionDays(
            "RETENTION_FORGERY_DAYS", "delete-forgeries-after-days", flags.deleteForgeriesAfterDays
        )
        let events = try retentionDays("RETENTION_EVENTS_DAYS", "delete-events-after-days", flags.deleteEventsAfterDays)
        let notifications = try retentionDays(
            "RETENTION_NOTIFICATIONS_DAYS", "delete-notifications-after-days", flags.deleteNotificationsAfterDays,
            minimum: Retention.minimumHistoryDays,
            why: "Apple's Notification History reaches that far back, and a notification replayed from it must find "
                + "its row, or it is applied again"
        )
        let refundRequests = try retentionDays(
            "RETENTION_REFUND_REQUESTS_DAYS", "delete-refund-requests-after-days", flags.deleteRefundRequestsAfterDays,
            minimum: Retention.minimumHistoryDays,
            why: "a request's notification is kept that long, and the request records what was sent to Apple and "
                + "Apple's decision, which a question about the refund is answered from"
        )
        // 0 means "never" for every kind but forgeries, where it means "as other rejected notifications".
        func never(_ days: Double?) -> Double? { days == 0 ? Retention.neverDays : days }
        let forgeryDays: Double? = switch forgeries {
        case nil: Retention.forgeryDays
        case 0: nil
        case let days: days
        }
        let retention = Retention(
            clearReceiptsAfterDays: clear == 0 ? nil : clear,
            deleteAfterDays: delete == 0 ? nil : delete,
            deleteForgeriesAfterDays: forgeryDays,
            deleteEventsAfterDays: never(events),
            deleteNotificationsAfterDays: never(notifications),
            deleteRefundRequestsAfterDays: never(refundRequests)
        )
        return retention.deletesMoreThanForgeries || retention.deleteForgeriesAfterSeconds != nil ? retention : nil
    }

    /// One period in days: the flag (`sweep --<option>`), else the variable, else nil; at most `Retention.neverDays`;
    /// 0 or at least `minimum`. An error names the flag when one was given, else the variable.
    private func retentionDays(
        _ name: String, _ option: String, _ flag: Double?, minimum: Double = 0, why: String = ""
    ) throws -> Double? {
        guard flag != nil || !(environment[name] ?? "").isEmpty else { return nil }
        let label = flag == nil ? name : "--\(option)"
        let days = try number(label, flag: flag, default: 0)
        let shown = Int(exactly: days).map(String.init) ?? String(days)
        guard days <= Retention.neverDays else {
            throw ConfigurationError(
                .outOfRange, "\(label) must be at most \(Int(Retention.neverDays)) days (100 years), got \(shown)"
            )
        }
        guard days == 0 || days >= minimum else {
            throw ConfigurationError(
                .outOfRange,
                "\(label) must be at least \(Int(minimum)) days, got \(shown): \(why); 0 keeps the rows for good"
            )
        }
        return days
    }
}
