/// Lost orders (issue 37): the other purchases an answer of Apple's shows, which may be orders the app never sent.
extension VerdictRules {
    /// At most this many purchases of one answer are offered to the ledger, newest first: a heavy buyer's history
    /// (every consumable, with one token per customer) costs one look-up each, and this bounds it per job.
    public static let seenPurchasesLimit = 20
    /// Purchases made this long before the order are not offered: a purchase that old is either credited or was
    /// made before the service knew its customer (its token was registered later), and it reaches its customer
    /// through Apple's notification or a claim instead.
    public static let seenPurchasesWindowMs: Int64 = 30 * 86_400_000

    /// The purchases of `receipt` that carry an appAccountToken (a UUID) and are not the ones the job itself is
    /// credited with (`excluding`): the ledger credits each that nothing credited to the token's customer, if the
    /// token was registered before the purchase was made (`receipt_seen_credit()`). None when the answer is not one
    /// of our apps' for the order's app (`bundle_mismatch`), or when the job's own environment is refused: what such
    /// an answer shows says nothing about our customers. Cancelled purchases are left out (they are revocations).
    /// Pure: the window counts back from the order's time, never from the clock.
    public static func seenPurchases(
        receipt: ReceiptContents,
        order: OrderContext,
        configuration: RulesConfiguration,
        excluding credited: Set<String>
    ) -> [Purchase] {
        seenPurchases(
            merged: merge(receipt.entries), receipt: receipt, order: order, configuration: configuration,
            excluding: credited
        )
    }

    /// `seenPurchases(receipt:order:configuration:excluding:)` with the receipt's entries already merged (`merged`,
    /// newest first), as `decide` has them.
    static func seenPurchases(
        merged: [Purchase], receipt: ReceiptContents, order: OrderContext, configuration: RulesConfiguration,
        excluding credited: Set<String>
    ) -> [Purchase] {
        guard let bundleId = receipt.bundleId, bundleId == order.bundleId, configuration.bundleIds.contains(bundleId),
            receipt.environment == .production || configuration.sandboxPolicy.allows(userId: order.userId)
        else { return [] }
        let since = order.orderTimeMs.subtractingReportingOverflow(seenPurchasesWindowMs)
        let earliest = since.overflow ? Int64.min : since.partialValue
        var seen: [Purchase] = []
        for purchase in merged where seen.count < seenPurchasesLimit {
            guard let token = purchase.appAccountToken, isUUID(token), !purchase.isCancelled,
                !credited.contains(purchase.transactionId), let date = purchase.purchaseDateMs, date >= earliest
            else { continue }
            seen.append(purchase)
        }
        return seen
    }

    /// 8-4-4-4-12 hexadecimal digits: the only appAccountToken Apple gives (anything else names nobody).
    static func isUUID(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            default:
                let hex = (byte >= 48 && byte <= 57) || (byte | 0x20 >= 97 && byte | 0x20 <= 102)
                guard hex else { return false }
            }
        }
        return true
    }
}
