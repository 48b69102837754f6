/// The App Store Server API endpoints this client calls; each is paced on its own.
public enum ServerAPIOperation: String, Sendable, Hashable, CaseIterable {
    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}`.
    case transactionInfo = "transaction_info"
    /// Get Transaction History v2: `GET /inApps/v2/history/{transactionId}?revision=…`.
    case transactionHistory = "transaction_history"
    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}`.
    case orderLookup = "order_lookup"
    /// Get Notification History: `POST /inApps/v1/notifications/history?paginationToken=…`.
    case notificationHistory = "notification_history"
    /// Send Consumption Information v2: `PUT /inApps/v2/transactions/consumption/{transactionId}`.
    case sendConsumption = "send_consumption"
    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    case subscriptionStatuses = "subscription_statuses"
    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`.
    case setAppAccountToken = "set_app_account_token"
    /// Request a Test Notification: `POST /inApps/v1/notifications/test`.
    case requestTestNotification = "request_test_notification"
    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    case testNotificationStatus = "test_notification_status"
    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}`.
    case appTransactionInfo = "app_transaction_info"

    /// Apple's limit per app: 50 requests a second, Look Up Order ID 10.
    public var appleRequestsPerSecond: Double {
        self == .orderLookup ? 10 : 50
    }
}
