/// The verdict rules (docs/architecture.md, rules 2 to 6): given a receipt Apple accepted (status 0) and the order
/// it is meant to pay for, decide what to credit, what to reject, or whether to ask again later.
///
/// Pure: no I/O and no clock. Every time is a parameter (`OrderContext.orderTimeMs`), never "now", so the verdict of a
/// job is the same whenever it runs. The ledger later decides `already_credited` and `owned_by_other_user` among the
/// candidates returned here.
public enum VerdictRules {
    /// Decides one job. Checks, in order: sandbox policy, bundle id, an empty purchase list (retry, then
    /// `no_purchases`), then either the client's transaction or the order's product's purchases.
    ///
    /// `Verdict.cancelledPurchases` lists every refunded purchase of the receipt, whatever the decision, so the ledger
    /// can revoke any it credited earlier; it stays empty when the receipt is not for one of `configuration.bundleIds`
    /// (another app's receipt says nothing about our ledger).
    public static func decide(
        receipt: ReceiptContents,
        order: OrderContext,
        configuration: RulesConfiguration
    ) -> Verdict {
        let purchases = merge(receipt.entries)
        let isOurApp = receipt.bundleId.map(configuration.bundleIds.contains) ?? false
        let decision = decision(purchases: purchases, receipt: receipt, order: order, configuration: configuration)
        // The job's own purchase (its first candidate, nearly always the one credited) is not offered again.
        let seen: [Purchase] =
            switch decision {
            case .credit(let candidates):
                seenPurchases(
                    merged: purchases, receipt: receipt, order: order, configuration: configuration,
                    excluding: Set(candidates.prefix(1).map(\.transactionId))
                )
            case .reject:
                seenPurchases(merged: purchases, receipt: receipt, order: order, configuration: configuration, excluding: [])
            case .retry:
                []
            }
        return Verdict(
            decision: decision,
            environment: receipt.environment,
            cancelledPurchases: isOurApp ? purchases.filter(\.isCancelled) : [],
            seenPurchases: seen
        )
    }

    private static func decision(
        purchases: [Purchase],
        receipt: ReceiptContents,
        order: OrderContext,
        configuration: RulesConfiguration
    ) -> Verdict.Decision {
        if let refusal = refusal(environment: receipt.environment, bundleId: receipt.bundleId, order, configuration) {
            return refusal
        }
        if purchases.isEmpty {
            return order.attempt < configuration.noPurchasesAttempts
                ? .retry(detail: Detail.noPurchasesYet(order.attempt, configuration.noPurchasesAttempts))
                : .reject(.noPurchases, detail: Detail.noPurchases(order.attempt))
        }
        if let transactionId = order.clientTransactionId, !transactionId.isEmpty {
            return decideClientTransaction(transactionId, purchases: purchases, order: order, configuration: configuration)
        }
        return decideByProduct(purchases: purchases, order: order, configuration: configuration)
    }

    /// The checks before any purchase is looked at: the sandbox policy, then the app.
    private static func refusal(
        environment: PurchaseEnvironment, bundleId: String?, _ order: OrderContext, _ configuration: RulesConfiguration
    ) -> Verdict.Decision? {
        if environment != .production && !configuration.sandboxPolicy.allows(userId: order.userId) {
            return .reject(.sandboxNotAllowed, detail: Detail.sandboxNotAllowed(configuration.sandboxPolicy, order))
        }
        guard let bundleId, bundleId == order.bundleId, configuration.bundleIds.contains(bundleId) else {
            return .reject(.bundleMismatch, detail: Detail.bundleMismatch(bundleId, order.bundleId))
        }
        return nil
    }

    /// A source asked for the order's product alone (the App Store Server API's Transaction History filtered by
    /// product) that has none of it, in `environment` for `bundleId`: after the same checks, `product_mismatch`, as
    /// for a receipt whose purchases include none of the order's product.
    public static func decideProductMissing(
        environment: PurchaseEnvironment, bundleId: String, order: OrderContext, configuration: RulesConfiguration
    ) -> Verdict {
        let decision = refusal(environment: environment, bundleId: bundleId, order, configuration)
            ?? .reject(.productMismatch, detail: "the customer's App Store history has no purchase of \(order.productId)")
        return Verdict(decision: decision, environment: environment, cancelledPurchases: [])
    }

    /// docs/architecture.md, rule 3, with a client transaction id: that very transaction must pay for the order.
    private static func decideClientTransaction(
        _ transactionId: String,
        purchases: [Purchase],
        order: OrderContext,
        configuration: RulesConfiguration
    ) -> Verdict.Decision {
        guard let purchase = purchases.first(where: { $0.transactionId == transactionId }) else {
            return .reject(.transactionNotFound, detail: Detail.clientTransactionNotFound(transactionId, purchases))
        }
        guard purchase.productId == order.productId else {
            return .reject(.productMismatch, detail: Detail.clientTransactionProduct(purchase, order.productId))
        }
        guard purchase.matchesAccount(of: order) else {
            return .reject(.accountMismatch, detail: Detail.accountMismatch([purchase], order))
        }
        guard configuration.familySharing.allows(purchase) else {
            return .reject(.familyShared, detail: Detail.familyShared([purchase]))
        }
        if purchase.isCancelled {
            return .reject(.refunded, detail: Detail.refunded([purchase]))
        }
        if isExpired(purchase, at: order.orderTimeMs) {
            return .reject(.expired, detail: Detail.expired([purchase], orderTimeMs: order.orderTimeMs))
        }
        return .credit(candidates: [purchase])
    }

    /// docs/architecture.md, rule 3, without a client transaction id: the order's product's purchases made since the
    /// order (with slack), of the order's account, not shared through Family Sharing when `FAMILY_SHARING` is reject,
    /// neither refunded nor expired at the order time, newest first.
    private static func decideByProduct(
        purchases: [Purchase],
        order: OrderContext,
        configuration: RulesConfiguration
    ) -> Verdict.Decision {
        // `purchases` is already newest first; filtering keeps that order.
        let ofProduct = purchases.filter { $0.productId == order.productId }
        guard !ofProduct.isEmpty else {
            return .reject(.productMismatch, detail: Detail.productNotInReceipt(order.productId, purchases))
        }

        var sinceOrder = ofProduct
        if let createdAtMs = order.orderCreatedAtMs {
            let earliestMs = createdAtMs - configuration.orderTimeSlackMs
            // A purchase without a date cannot be shown to predate the order, so it stays a candidate.
            sinceOrder = ofProduct.filter { ($0.purchaseDateMs ?? earliestMs) >= earliestMs }
            guard !sinceOrder.isEmpty else {
                return .reject(
                    .transactionNotFound,
                    detail: Detail.noPurchaseSinceOrder(order.productId, earliestMs: earliestMs, ofProduct)
                )
            }
        }

        let ofAccount = sinceOrder.filter { $0.matchesAccount(of: order) }
        guard !ofAccount.isEmpty else {
            return .reject(.accountMismatch, detail: Detail.accountMismatch(sinceOrder, order))
        }
        sinceOrder = ofAccount

        let allowed = sinceOrder.filter(configuration.familySharing.allows)
        guard !allowed.isEmpty else {
            return .reject(.familyShared, detail: Detail.familyShared(sinceOrder))
        }
        sinceOrder = allowed

        let notRefunded = sinceOrder.filter { !$0.isCancelled }
        guard !notRefunded.isEmpty else {
            return .reject(.refunded, detail: Detail.refunded(sinceOrder))
        }

        let active = notRefunded.filter { !isExpired($0, at: order.orderTimeMs) }
        guard !active.isEmpty else {
            return .reject(.expired, detail: Detail.expired(notRefunded, orderTimeMs: order.orderTimeMs))
        }
        return .credit(candidates: active)
    }

    /// A subscription period that had ended by the order time (an expiry at exactly that millisecond counts as ended).
    /// Purchases without an expiry date never expire.
    static func isExpired(_ purchase: Purchase, at orderTimeMs: Int64) -> Bool {
        guard let expiresDateMs = purchase.expiresDateMs else { return false }
        return expiresDateMs <= orderTimeMs
    }
}
