import AppStoreModel

extension ServerAPIClient {
    /// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`): the customer's app
    /// transaction (JWS: verify it with `SignedDataVerifier.verifyAppTransaction` before trusting it), for any
    /// transaction id, original transaction id or appTransactionId of theirs. `.notFound` when no environment asked
    /// knows the id or the customer has no app transaction (4040019).
    ///
    /// - Parameter environment: nil asks production, then the sandbox once when production does not know the id.
    public func appTransactionInfo(
        transactionId: String,
        bundleId: String,
        environment: AppStoreEndpoint? = nil,
        completion: @escaping @Sendable (ServerAPIResult<String>, [AppStoreCall]) -> Void
    ) {
        lookUp(
            { () throws(AppStoreFailure) in try .appTransactionInfo(transactionId: transactionId) },
            bundleId: bundleId, environment: environment, read: Self.signedAppTransactionInfo(_:environment:),
            completion: completion
        )
    }

    /// Blocking form of `appTransactionInfo(transactionId:bundleId:environment:completion:)`.
    public func appTransactionInfo(
        transactionId: String, bundleId: String, environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<String>, [AppStoreCall]) {
        blocking {
            appTransactionInfo(transactionId: transactionId, bundleId: bundleId, environment: environment, completion: $0)
        }
    }

    static func signedAppTransactionInfo(_ body: [UInt8], environment: AppStoreEndpoint) -> Attempt<String> {
        decode(AppTransactionInfoResponse.self, from: body, environment: environment).flatMap { info in
            guard let signed = info.signedAppTransactionInfo, !signed.isEmpty else {
                return unreadable("an answer without signedAppTransactionInfo", environment: environment)
            }
            return .value(signed)
        }
    }
}
