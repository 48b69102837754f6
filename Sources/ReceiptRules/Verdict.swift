/// What the rules decided for one job, given a receipt Apple accepted.
public struct Verdict: Sendable, Hashable {
    public enum Decision: Sendable, Hashable {
        /// Credit the first of these purchases (in order) that the ledger does not already hold for another order.
        /// If none can be credited the ledger decides between `already_credited` and `owned_by_other_user`.
        case credit(candidates: [Purchase])
        /// A final rejection.
        case reject(RejectionReason, detail: String)
        /// No verdict yet (for example an empty purchase list shortly after the purchase): try again later.
        case retry(detail: String)
    }

    public var decision: Decision
    public var environment: PurchaseEnvironment
    /// Cancelled purchases seen in the receipt: if the ledger holds any of them, they are marked revoked,
    /// whatever this job's own decision.
    public var cancelledPurchases: [Purchase]
    /// Issue 37: for a credit or a rejection, the answer's other purchases that carry a token (see
    /// `VerdictRules.seenPurchases`), which the ledger may credit to their token's customer.
    public var seenPurchases: [Purchase]

    public init(
        decision: Decision, environment: PurchaseEnvironment, cancelledPurchases: [Purchase] = [],
        seenPurchases: [Purchase] = []
    ) {
        self.decision = decision
        self.environment = environment
        self.cancelledPurchases = cancelledPurchases
        self.seenPurchases = seenPurchases
    }
}
