/// The stable reasons written to `receipt_jobs.reason` (see DESIGN.md). The API layer matches on these strings.
public enum RejectionReason: String, Sendable, Hashable, CaseIterable, Codable {
    case bundleMismatch = "bundle_mismatch"
    case productMismatch = "product_mismatch"
    case transactionNotFound = "transaction_not_found"
    case alreadyCredited = "already_credited"
    case ownedByOtherUser = "owned_by_other_user"
    case refunded
    case expired
    case invalidReceipt = "invalid_receipt"
    case sandboxNotAllowed = "sandbox_not_allowed"
    case noPurchases = "no_purchases"
    case malformedInput = "malformed_input"
    /// The reason of a `dead` job.
    case retriesExhausted = "retries_exhausted"
}
