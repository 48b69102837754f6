/// The body of a verifyReceipt call.
public struct VerifyReceiptRequest: Codable, Sendable, Equatable {
    /// The base64 app receipt, as the app sent it.
    public var receiptData: String
    /// The app's shared secret (needed for auto-renewable subscriptions).
    public var password: String?
    /// Always false here: the rules need every transaction, not only the latest of each subscription.
    public var excludeOldTransactions: Bool

    public init(receiptData: String, password: String?, excludeOldTransactions: Bool = false) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        receiptData = try container.decodeLenientString(forKey: .receiptData) ?? ""
        password = try container.decodeLenientString(forKey: .password)
        excludeOldTransactions = try container.decodeLenientBool(forKey: .excludeOldTransactions) ?? false
    }
}
