/// The App Store Server API's answer to Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`).
public struct TransactionInfoResponse: Codable, Sendable, Hashable {
    /// The transaction, signed by the App Store (a JWS whose payload is a JWSTransactionDecodedPayload).
    public var signedTransactionInfo: String?

    public init(signedTransactionInfo: String?) {
        self.signedTransactionInfo = signedTransactionInfo
    }
}
