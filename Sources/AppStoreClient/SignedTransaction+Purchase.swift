import AppStoreSignedData
import ReceiptRules

extension SignedTransaction {
    /// The environment the rules and the ledger record, as the verifier accepted it: Production, Sandbox, or Xcode
    /// and LocalTesting (only when test environments are allowed, for development; never counted as Sandbox).
    /// A transaction that names none counts as Sandbox.
    public var purchaseEnvironment: PurchaseEnvironment {
        environment.flatMap(PurchaseEnvironment.init(rawValue:)) ?? .sandbox
    }

    /// The normalised purchase, or nil when the transaction lacks a transaction or product id (it cannot be credited).
    /// A revocation (refund, Family Sharing revoked) counts as a cancellation, as in a receipt.
    public var purchase: Purchase? {
        guard let transactionId, !transactionId.isEmpty, let productId, !productId.isEmpty else { return nil }
        return Purchase(
            transactionId: transactionId,
            originalTransactionId: originalTransactionId.flatMap { $0.isEmpty ? nil : $0 },
            webOrderLineItemId: webOrderLineItemId.flatMap { $0.isEmpty || $0 == "0" ? nil : $0 },
            productId: productId,
            quantity: max(quantity ?? 1, 1),
            purchaseDateMs: purchaseDateMs,
            expiresDateMs: expiresDateMs,
            cancellationDateMs: revocationDateMs,
            cancellationReason: revocationReason.map(String.init),
            appAccountToken: appAccountToken,
            inAppOwnershipType: inAppOwnershipType,
            priceMilliunits: price,
            currency: currency,
            storefront: storefront,
            storefrontId: storefrontId,
            offerType: offerType,
            offerDiscountType: offerDiscountType,
            transactionReason: transactionReason,
            billingPlanType: billingPlanType,
            signedDateMs: signedDateMs
        )
    }

    /// What the rules judge: the app the transaction is for, and its purchase.
    public var contents: ReceiptContents {
        ReceiptContents(environment: purchaseEnvironment, bundleId: bundleId, entries: purchase.map { [$0] } ?? [])
    }
}

extension Array where Element == SignedTransaction {
    /// Many signed transactions of one app (a transaction history) as one set of purchases for the rules.
    public func contents(environment: PurchaseEnvironment, bundleId: String?) -> ReceiptContents {
        ReceiptContents(environment: environment, bundleId: bundleId, entries: compactMap(\.purchase))
    }

    /// The bundle id every transaction names; nil when one names another (or none does), so the rules reject the
    /// whole set `bundle_mismatch`: a history whose transactions are not all of one app is not that app's.
    public var sharedBundleId: String? {
        guard let bundleId = first?.bundleId, allSatisfy({ $0.bundleId == bundleId }) else { return nil }
        return bundleId
    }
}
