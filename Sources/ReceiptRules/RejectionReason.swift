/// The stable reasons written to `receipt_jobs.reason` (docs/architecture.md, rules 2 to 8; the README lists them).
/// The API layer matches on these strings.
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
    /// A StoreKit 2 signed transaction whose signature or certificate chain does not hold.
    case invalidSignature = "invalid_signature"
    /// The purchase carries an appAccountToken other than the order's.
    case accountMismatch = "account_mismatch"
    /// The purchase is shared through Family Sharing (FAMILY_SHARED), and `FAMILY_SHARING` is reject.
    case familyShared = "family_shared"
    /// An expected order (`expect_purchase()`) whose purchase was not credited by its deadline: decided by the
    /// scheduler in SQL (`receipt_sweep()`), never by the rules. Not to be confused with `no_purchases`.
    case notPurchased = "not_purchased"
    /// The reason of a `dead` job.
    case retriesExhausted = "retries_exhausted"
}
