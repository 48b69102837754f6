import AppStoreModel

extension ServerAPIClient {
    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`): every auto-renewable
    /// subscription chain of the customer who owns `transactionId`, for `bundleId`, with Apple's status (1 active,
    /// 2 expired, 3 billing retry, 4 grace period, 5 revoked) and each chain's signed latest transaction and renewal
    /// info, flattened across subscription groups. Paced as its own operation. The signed items come back as JWS:
    /// verify each with `SignedDataVerifier` before trusting it.
    public func subscriptionStatuses(
        transactionId: String,
        bundleId: String,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<[SubscriptionStatusesResponse.LastTransaction]>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .subscriptionStatuses(transactionId: transactionId) },
            bundleId: bundleId, environment: environment, read: Self.subscriptionChains(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `subscriptionStatuses(transactionId:bundleId:environment:completion:)`.
    public func subscriptionStatuses(
        transactionId: String, bundleId: String, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<[SubscriptionStatusesResponse.LastTransaction]>, [AppStoreCall]) {
        blocking {
            subscriptionStatuses(
                transactionId: transactionId, bundleId: bundleId, environment: environment, completion: $0
            )
        }
    }

    static func subscriptionChains(
        _ body: [UInt8], environment: AppStoreEndpoint
    ) -> Attempt<[SubscriptionStatusesResponse.LastTransaction]> {
        decode(SubscriptionStatusesResponse.self, from: body, environment: environment).map { response in
            (response.data ?? []).flatMap { $0.lastTransactions ?? [] }
        }
    }
}
