import AppStoreModel

extension ServerAPIClient {
    /// Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`, App Store Server
    /// API 1.19): the answer to a CONSUMPTION_REQUEST about `transactionId`, in the environment the request came
    /// from. `body` is the ConsumptionRequest JSON (customerConsented, deliveryStatus, refundPreference,
    /// consumptionPercentage, sampleContentProvided), sent as it is; Apple answers 202 with no body.
    /// Paced with the other calls (its own operation, 50 a second). The body is never logged.
    public func sendConsumptionInformation(
        transactionId: String,
        body: [UInt8],
        bundleId: String,
        environment: AppStoreEndpoint,
        completion: @escaping @Sendable (ServerAPIResult<Bool>, [AppStoreCall]) -> Void
    ) {
        let request: ServerAPIRequest
        do {
            request = try .sendConsumption(transactionId: transactionId, body: body)
        } catch {
            return refuse(error, completion)
        }
        acrossEnvironments(environment, completion: completion) { [self] environment, done in
            exchange(
                request, bundleId: bundleId, environment: environment, read: { _ in .value(true) },
                completion: { answer, call in done(answer, [call]) }
            )
        }
    }

    /// Blocking form of `sendConsumptionInformation(transactionId:body:bundleId:environment:completion:)`.
    public func sendConsumptionInformation(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEndpoint
    ) -> (ServerAPIResult<Bool>, [AppStoreCall]) {
        blocking {
            sendConsumptionInformation(
                transactionId: transactionId, body: body, bundleId: bundleId, environment: environment,
                completion: $0
            )
        }
    }
}
