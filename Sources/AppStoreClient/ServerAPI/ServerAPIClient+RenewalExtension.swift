import AppStoreModel

extension ServerAPIClient {
    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`): moves the
    /// renewal date of the chain's active subscription by `request.extendByDays` (1 to 90). Apple answers whether it
    /// did (`success`) and from when, and sends a RENEWAL_EXTENDED notification. Apple ignores a request id it has
    /// seen before for the chain, so a retryable failure may be sent again with the same request.
    /// - Parameter environment: nil asks production, then the sandbox once when production does not know the chain.
    public func extendRenewalDate(
        originalTransactionId: String, _ request: RenewalExtension.Request, bundleId: String,
        environment: AppStoreEndpoint? = nil
    ) -> (ServerAPIResult<RenewalExtension.Response>, [AppStoreCall]) {
        blocking { completion in
            lookUp(
                { () throws(AppStoreFailure) in
                    try .extendRenewalDate(originalTransactionId: originalTransactionId, request)
                },
                bundleId: bundleId, environment: environment,
                read: { body, environment in Self.decode(RenewalExtension.Response.self, from: body, environment: environment) },
                completion: completion
            )
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers (`POST /inApps/v1/subscriptions/extend/mass`) of
    /// `request.productId`, in `request.storefrontCountryCodes` (nil: all). Apple accepts it and works through the
    /// subscribers later: each one extended gets a RENEWAL_EXTENDED notification, the end a RENEWAL_EXTENSION SUMMARY;
    /// `massExtensionStatus` asks how far it got.
    public func massExtendRenewalDate(
        _ request: RenewalExtension.MassRequest, bundleId: String, environment: AppStoreEndpoint
    ) -> (ServerAPIResult<RenewalExtension.MassResponse>, [AppStoreCall]) {
        blocking { completion in
            lookUp(
                { () throws(AppStoreFailure) in try .massExtendRenewalDate(request) },
                bundleId: bundleId, environment: environment,
                read: { body, environment in
                    Self.decode(RenewalExtension.MassResponse.self, from: body, environment: environment)
                },
                completion: completion
            )
        }
    }

    /// Get Status of Subscription Renewal Date Extensions
    /// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
    public func massExtensionStatus(
        productId: String, requestIdentifier: String, bundleId: String, environment: AppStoreEndpoint
    ) -> (ServerAPIResult<RenewalExtension.MassStatus>, [AppStoreCall]) {
        blocking { completion in
            lookUp(
                { () throws(AppStoreFailure) in
                    try .massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier)
                },
                bundleId: bundleId, environment: environment,
                read: { body, environment in
                    Self.decode(RenewalExtension.MassStatus.self, from: body, environment: environment)
                },
                completion: completion
            )
        }
    }
}
