import AppReceipt
/// What arrived in `receipt-data`.
enum SubmittedReceipt: Sendable {
    /// A made-up receipt (`ScenarioReceipt`).
    case scenario(ScenarioReceipt)
    /// A real PKCS#7 app receipt.
    case app(AppReceipt)
    /// Not base64, or neither kind of receipt: Apple answers 21002.
    case unreadable

    init(receiptData: String) {
        guard let bytes = Base64Text.decode(receiptData) else {
            self = .unreadable
            return
        }
        if let scenario = ScenarioReceipt.scannedOrDecoded(json: bytes) {
            self = .scenario(scenario)
        } else if let receipt = try? AppReceipt.decode(pkcs7: bytes) {
            self = .app(receipt)
        } else {
            self = .unreadable
        }
    }
}
