import AppStoreModel

extension ServerAPIClient {
    /// Request a Test Notification (`POST /inApps/v1/notifications/test`): Apple sends a TEST notification to the
    /// notifications URL App Store Connect holds for the app in `environment`, and answers with the token Get Test
    /// Notification Status takes. `.configurationError` when Apple refuses our key (401, 403) or has no URL for the
    /// app (4040007); `.retryable` for 429, 5xx and transport failures.
    public func requestTestNotification(
        bundleId: String,
        environment: AppStoreEndpoint,
        completion: @escaping @Sendable (ServerAPIResult<String>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in .requestTestNotification() },
            bundleId: bundleId, environment: environment, read: Self.testNotificationToken(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `requestTestNotification(bundleId:environment:completion:)`.
    public func requestTestNotification(
        bundleId: String, environment: AppStoreEndpoint
    ) -> (ServerAPIResult<String>, [AppStoreCall]) {
        blocking { requestTestNotification(bundleId: bundleId, environment: environment, completion: $0) }
    }

    /// Get Test Notification Status (`GET /inApps/v1/notifications/test/{token}`): the TEST notification's signed
    /// payload and Apple's attempts to send it. `.notFound` (4040008) while Apple has no status yet, or once the
    /// token expired.
    public func testNotificationStatus(
        token: String,
        bundleId: String,
        environment: AppStoreEndpoint,
        completion: @escaping @Sendable (ServerAPIResult<CheckTestNotificationResponse>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .testNotificationStatus(token: token) },
            bundleId: bundleId, environment: environment,
            read: { body, environment in
                Self.decode(CheckTestNotificationResponse.self, from: body, environment: environment)
            },
            completion: completion
        )
    }

    /// Blocking form of `testNotificationStatus(token:bundleId:environment:completion:)`.
    public func testNotificationStatus(
        token: String, bundleId: String, environment: AppStoreEndpoint
    ) -> (ServerAPIResult<CheckTestNotificationResponse>, [AppStoreCall]) {
        blocking { testNotificationStatus(token: token, bundleId: bundleId, environment: environment, completion: $0) }
    }

    static func testNotificationToken(_ body: [UInt8], environment: AppStoreEndpoint) -> Attempt<String> {
        decode(SendTestNotificationResponse.self, from: body, environment: environment).flatMap { answer in
            guard let token = answer.testNotificationToken, !token.isEmpty else {
                return unreadable("an answer without testNotificationToken", environment: environment)
            }
            return .value(token)
        }
    }
}
