/// The App Store Server API's answer to Get App Transaction Info
/// (`GET /inApps/v1/transactions/appTransactions/{transactionId}`).
public struct AppTransactionInfoResponse: Codable, Sendable, Hashable {
    /// The customer's app transaction, signed by the App Store (a JWS whose payload is a
    /// JWSAppTransactionDecodedPayload).
    public var signedAppTransactionInfo: String?

    public init(signedAppTransactionInfo: String?) {
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}
