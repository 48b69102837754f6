import AppStoreModel
import ReceiptRules

extension VerifyReceiptResponse {
    /// The normalised purchases of an accepted receipt: every entry of `receipt.in_app` and of
    /// `latest_receipt_info`, unmerged (the rules merge them). Entries without a transaction or product id are
    /// left out; they cannot be credited.
    public func contents(environment: PurchaseEnvironment) -> ReceiptContents {
        let entries = (receipt?.inApp ?? []) + (latestReceiptInfo ?? [])
        return ReceiptContents(
            environment: environment,
            bundleId: receipt?.bundleId,
            entries: entries.compactMap(Purchase.init(appleEntry:))
        )
    }
}

extension Purchase {
    init?(appleEntry entry: InAppTransaction) {
        guard let transactionId = entry.transactionId, !transactionId.isEmpty,
            let productId = entry.productId, !productId.isEmpty
        else { return nil }
        self.init(
            transactionId: transactionId,
            originalTransactionId: entry.originalTransactionId.flatMap { $0.isEmpty ? nil : $0 },
            webOrderLineItemId: entry.webOrderLineItemId.flatMap { $0.isEmpty || $0 == "0" ? nil : $0 },
            productId: productId,
            quantity: max(entry.quantity ?? 1, 1),
            purchaseDateMs: entry.purchaseDateMs,
            expiresDateMs: entry.expiresDateMs,
            cancellationDateMs: entry.cancellationDateMs,
            cancellationReason: entry.cancellationReason,
            inAppOwnershipType: entry.inAppOwnershipType
        )
    }
}
