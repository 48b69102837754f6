/// The body of Get Notification History (`POST /inApps/v1/notifications/history?paginationToken=…`). Apple keeps
/// 180 days of history; `transactionId` and `notificationType` exclude each other.
public struct NotificationHistoryRequest: Codable, Sendable, Hashable {
    /// Milliseconds since 1970, inclusive.
    public var startDate: Int64
    /// Milliseconds since 1970, before which notifications were sent; a future date counts as now.
    public var endDate: Int64
    /// Only this type ("SUBSCRIBED", "REFUND", …).
    public var notificationType: String?
    /// Only this subtype; needs `notificationType`.
    public var notificationSubtype: String?
    /// Only the notifications of the customer who owns this transaction (any of their transactions).
    public var transactionId: String?
    /// Only the notifications that did not reach our server (or are still being retried by Apple).
    public var onlyFailures: Bool?

    public init(
        startDate: Int64,
        endDate: Int64,
        notificationType: String? = nil,
        notificationSubtype: String? = nil,
        transactionId: String? = nil,
        onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}
