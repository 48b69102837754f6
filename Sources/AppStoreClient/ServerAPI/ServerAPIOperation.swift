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
    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`.
    case extendRenewalDate = "extend_renewal_date"
    /// Extend Subscription Renewal Dates for All Active Subscribers: `POST /inApps/v1/subscriptions/extend/mass`.
    case massExtendRenewalDate = "mass_extend_renewal_date"
    /// Get Status of Subscription Renewal Date Extensions:
    /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`.
    case massExtensionStatus = "mass_extension_status"
    /// Get Refund History v2: `GET /inApps/v2/refund/lookup/{transactionId}?revision=…`.
    case refundHistory = "refund_history"
    /// Request a Test Notification: `POST /inApps/v1/notifications/test`.
    case requestTestNotification = "request_test_notification"
    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    case testNotificationStatus = "test_notification_status"
    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}`.
    case appTransactionInfo = "app_transaction_info"

    /// Apple's production limit per app ("Identifying rate limits"): 50 requests a second; Set App Account Token and
    /// Extend a Subscription Renewal Date 20; Look Up Order ID and Get Refund History 10; the mass extension, its
    /// status, and the test notification's two calls 1.
    public var appleRequestsPerSecond: Double {
        switch self {
        case .orderLookup, .refundHistory: 10
        case .setAppAccountToken, .extendRenewalDate: 20
        // Operator calls, one at a time: Apple's mass extension and its status are limited far below the rest.
        case .massExtendRenewalDate, .massExtensionStatus, .requestTestNotification, .testNotificationStatus: 1
        case .transactionInfo, .transactionHistory, .notificationHistory, .sendConsumption, .subscriptionStatuses,
            .appTransactionInfo:
            50
        }
    }

    /// Apple's limit per app in `environment`: the sandbox's are a tenth of production's.
    public func appleRequestsPerSecond(in environment: AppStoreEndpoint) -> Double {
        environment == .production ? appleRequestsPerSecond : appleRequestsPerSecond / 10
    }
}
