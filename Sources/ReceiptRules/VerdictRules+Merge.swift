extension VerdictRules {
    /// Merges every purchase entry a source listed (for verifyReceipt: `receipt.in_app` and `latest_receipt_info`
    /// together, in any order, duplicates included) into one `Purchase` per transaction id.
    ///
    /// - Entries with an empty transaction id or product id are dropped.
    /// - A field missing in one copy is filled from the other.
    /// - A cancellation in either copy wins (its date and reason are kept).
    /// - When both copies have an expiry date, the later one is kept.
    /// - FAMILY_SHARED in either copy wins over PURCHASED.
    /// - When two copies disagree on a field they both have (Apple does not do this, but the rules must not depend on
    ///   which copy came first), a fixed choice is made: the earlier purchase and cancellation date, the larger
    ///   quantity, the smaller id or reason. Every choice is commutative and associative, so the result never depends
    ///   on the input order.
    ///
    /// The result is ordered newest first: by purchase date descending (purchases without a date last), ties by
    /// transaction id descending (numerically for Apple's all-digit ids).
    public static func merge(_ entries: [Purchase]) -> [Purchase] {
        var byTransactionId: [String: Purchase] = [:]
        for entry in entries where !entry.transactionId.isEmpty && !entry.productId.isEmpty {
            if let seen = byTransactionId[entry.transactionId] {
                byTransactionId[entry.transactionId] = combine(seen, entry)
            } else {
                byTransactionId[entry.transactionId] = entry
            }
        }
        return byTransactionId.values.sorted(by: Purchase.isNewer)
    }

    /// Two copies of the same transaction, as one.
    static func combine(_ a: Purchase, _ b: Purchase) -> Purchase {
        // The initializer sets originalTransactionId to transactionId when the source gave none, so a copy whose
        // original id equals its own id is the one that may be missing it.
        let originalTransactionId: String =
            switch (a.originalTransactionId == a.transactionId, b.originalTransactionId == b.transactionId) {
            case (true, false): b.originalTransactionId
            case (false, true): a.originalTransactionId
            default: min(a.originalTransactionId, b.originalTransactionId)
            }
        let cancellation = earliestCancellation(
            (a.cancellationDateMs, a.cancellationReason),
            (b.cancellationDateMs, b.cancellationReason)
        )
        // Apple's price and its circumstances come as one, from the copy that has one (the lower price when both do,
        // so the merge does not depend on the order of the copies).
        let priced: Purchase? =
            switch (a.priceMilliunits, b.priceMilliunits) {
            case (nil, nil): nil
            case (.some, nil): a
            case (nil, .some): b
            case (.some(let x), .some(let y)): x <= y ? a : b
            }
        return Purchase(
            transactionId: a.transactionId,
            originalTransactionId: originalTransactionId,
            webOrderLineItemId: smallest(a.webOrderLineItemId, b.webOrderLineItemId),
            productId: min(a.productId, b.productId),
            // A source that does not report a quantity yields the default 1.
            quantity: max(a.quantity, b.quantity),
            purchaseDateMs: smallest(a.purchaseDateMs, b.purchaseDateMs),
            expiresDateMs: largest(a.expiresDateMs, b.expiresDateMs),
            cancellationDateMs: cancellation.date,
            cancellationReason: cancellation.reason,
            appAccountToken: smallest(a.appAccountToken, b.appAccountToken),
            // FAMILY_SHARED sorts before PURCHASED: a copy that says shared is believed.
            inAppOwnershipType: smallest(a.inAppOwnershipType, b.inAppOwnershipType),
            priceMilliunits: priced?.priceMilliunits,
            currency: priced?.currency,
            storefront: priced?.storefront ?? smallest(a.storefront, b.storefront),
            storefrontId: priced?.storefrontId ?? smallest(a.storefrontId, b.storefrontId),
            offerType: priced?.offerType,
            offerDiscountType: priced?.offerDiscountType,
            transactionReason: priced?.transactionReason ?? smallest(a.transactionReason, b.transactionReason),
            billingPlanType: smallest(a.billingPlanType, b.billingPlanType),
            // The newest signing of the two: what Apple said last of the period.
            signedDateMs: largest(a.signedDateMs, b.signedDateMs)
        )
    }

    /// The cancellation to keep: a dated one over none, the earlier date, and for the same date a reason over none.
    private static func earliestCancellation(
        _ a: (date: Int64?, reason: String?),
        _ b: (date: Int64?, reason: String?)
    ) -> (date: Int64?, reason: String?) {
        switch (a.date, b.date) {
        case (nil, nil): (nil, smallest(a.reason, b.reason))
        case (.some, nil): a
        case (nil, .some): b
        case (.some(let x), .some(let y)) where x < y: a
        case (.some(let x), .some(let y)) where x > y: b
        default: (a.date, smallest(a.reason, b.reason))
        }
    }

    /// The smaller of two values, a present one over a missing one.
    private static func smallest<T: Comparable>(_ a: T?, _ b: T?) -> T? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    /// The larger of two values, a present one over a missing one.
    private static func largest<T: Comparable>(_ a: T?, _ b: T?) -> T? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }
}
