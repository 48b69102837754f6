/// What a verifyReceipt `status` means for this service. Apple documents 0, 21000–21010 and 21100–21199;
/// anything else is treated as "no verdict yet".
public enum AppleStatusClass: Sendable, Hashable {
    /// The receipt is genuine: apply the verdict rules to its contents.
    case valid
    /// 21007: a sandbox receipt sent to production; ask the sandbox.
    case useSandbox
    /// 21008: a production receipt sent to the sandbox; ask production.
    case useProduction
    /// 21003, 21010: Apple will not vouch for this receipt. A final rejection (`invalid_receipt`).
    case invalidReceipt
    /// 21002: the data was malformed, or Apple had a temporary issue. Retried a few times, then `invalid_receipt`.
    case malformedData
    /// 21000, 21004: our request or shared secret is wrong. Never a verdict on the purchase; costs no attempt.
    case configurationError
    /// 21005, 21009, 21100–21199 and unknown statuses: Apple gave no verdict; try again later.
    case retryable
}

public enum AppleStatus {
    /// Every status Apple documents, with its meaning, for logs and errors.
    public static let descriptions: [Int: String] = [
        0: "valid",
        21000: "the request to the App Store was not made with HTTP POST or could not be read",
        21001: "status no longer sent by Apple",
        21002: "the receipt data was malformed or the service had a temporary issue",
        21003: "the receipt could not be authenticated",
        21004: "the shared secret does not match the one on file for the account",
        21005: "the receipt server was temporarily unable to provide the receipt",
        21006: "the receipt is valid but the subscription has expired",
        21007: "a sandbox receipt was sent to the production environment",
        21008: "a production receipt was sent to the sandbox environment",
        21009: "internal data access error",
        21010: "the user account cannot be found or has been deleted",
    ]

    public static func classify(_ status: Int) -> AppleStatusClass {
        switch status {
        case 0, 21006: .valid   // 21006 (iOS 6 style receipts) still carries the receipt: the rules judge expiry
        case 21007: .useSandbox
        case 21008: .useProduction
        case 21003, 21010: .invalidReceipt
        case 21002: .malformedData
        case 21000, 21004: .configurationError
        default: .retryable     // 21001, 21005, 21009, 21100–21199, anything unknown
        }
    }

    public static func describe(_ status: Int) -> String {
        if let text = descriptions[status] { return "\(status) (\(text))" }
        if (21100...21199).contains(status) { return "\(status) (internal data access error)" }
        return "\(status) (unknown status)"
    }
}
