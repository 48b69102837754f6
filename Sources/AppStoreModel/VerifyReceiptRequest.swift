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
}

extension VerifyReceiptRequest: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("receipt-data", \.receiptData),
        .value("password", \.password),
        .value("exclude-old-transactions", \.excludeOldTransactions, as: .native),
    ]

    public static var blank: Self { VerifyReceiptRequest(receiptData: "", password: nil) }

    /// The receipt, the secret and room for the rest: the body is written without growing its buffer.
    public var expectedJSONSize: Int { receiptData.utf8.count + (password?.utf8.count ?? 0) + 72 }
}
