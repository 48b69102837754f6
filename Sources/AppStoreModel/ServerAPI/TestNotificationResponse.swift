/// The App Store Server API's answer to Request a Test Notification (`POST /inApps/v1/notifications/test`).
public struct SendTestNotificationResponse: Codable, Sendable, Hashable {
    /// What Get Test Notification Status takes to tell how the TEST notification went.
    public var testNotificationToken: String?

    public init(testNotificationToken: String?) {
        self.testNotificationToken = testNotificationToken
    }
}

/// The App Store Server API's answer to Get Test Notification Status (`GET /inApps/v1/notifications/test/{token}`):
/// the TEST notification as Apple signed it, and Apple's attempts to send it (each with a sendAttemptResult:
/// SUCCESS, TIMED_OUT, TLS_ISSUE, CIRCULAR_REDIRECT, NO_RESPONSE, SOCKET_ISSUE, UNSUPPORTED_CHARSET,
/// INVALID_RESPONSE, PREMATURE_CLOSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, OTHER). The shape of a Notification History
/// item.
public typealias CheckTestNotificationResponse = NotificationHistoryItem
