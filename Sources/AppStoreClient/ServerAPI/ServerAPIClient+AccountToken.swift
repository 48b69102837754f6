import AppStoreModel

extension ServerAPIClient {
    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`, App Store
    /// Server API 1.16): gives the purchase chain `originalTransactionId` the token `appAccountToken` (a UUID), or
    /// replaces the one it has, so that Apple puts it in the chain's transactions and notifications from now on. For
    /// purchases made outside the app (an offer code redeemed in the App Store), which carry none. Apple answers 200
    /// with no body.
    ///
    /// What comes back: `.success` (with the environment that knows the chain); `.notFound` when no environment
    /// asked knows it (4040010); `.rejected` for an id or token Apple refuses (4000008 not an original transaction
    /// id's form, 4000187 a renewal's id rather than the original, 4000183 not a UUID, 4000185 a Family Sharing
    /// purchase; or refused here, unsent); `.configurationError` for our key or app (401, 403, 4040003);
    /// `.retryable` for 429, 5xx and transport failures. Setting the same token again changes nothing, so a
    /// retryable failure may be sent again.
    ///
    /// - Parameter environment: nil asks production, then the sandbox once when production does not know the id.
    public func setAppAccountToken(
        originalTransactionId: String,
        appAccountToken: String,
        bundleId: String,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<Bool>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in
                try .setAppAccountToken(originalTransactionId: originalTransactionId, appAccountToken: appAccountToken)
            },
            bundleId: bundleId, environment: environment, read: { _, _ in .value(true) }, completion: completion
        )
    }

    /// Blocking form of `setAppAccountToken(originalTransactionId:appAccountToken:bundleId:environment:completion:)`.
    public func setAppAccountToken(
        originalTransactionId: String, appAccountToken: String, bundleId: String, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<Bool>, [AppStoreCall]) {
        blocking {
            setAppAccountToken(
                originalTransactionId: originalTransactionId, appAccountToken: appAccountToken, bundleId: bundleId,
                environment: environment, completion: $0
            )
        }
    }
}
