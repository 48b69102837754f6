import AppStoreModel

/// One value of each model with every property set, each to something other than its blank value, so that every
/// field has something to carry on every path (`FieldListTests` checks that none is left unset).
enum Samples {
    static let transaction = InAppTransaction(
        quantity: 3,
        productId: "com.example.gems",
        transactionId: "1000000692879214",
        originalTransactionId: "1000000692878476",
        webOrderLineItemId: "1000000054042695",
        purchaseDateMs: 1_594_755_400_000,
        originalPurchaseDateMs: 1_594_755_207_000,
        expiresDateMs: 1_594_755_700_000,
        cancellationDateMs: 1_594_755_500_000,
        cancellationReason: "1",
        isTrialPeriod: true,
        isInIntroOfferPeriod: false,
        inAppOwnershipType: "PURCHASED"
    )

    static let receipt = ReceiptInfo(
        bundleId: "com.example.app",
        applicationVersion: "4",
        originalApplicationVersion: "1.0",
        receiptType: "ProductionSandbox",
        receiptCreationDateMs: 1_595_439_548_000,
        requestDateMs: 1_595_440_486_402,
        inApp: [transaction]
    )

    static let renewal = PendingRenewalInfo(
        productId: "com.example.monthly",
        autoRenewProductId: "com.example.annual",
        originalTransactionId: "1000000692878476",
        autoRenewStatus: "1"
    )

    static let response = VerifyReceiptResponse(
        status: 21006,
        environment: "Sandbox",
        isRetryable: true,
        receipt: receipt,
        latestReceiptInfo: [transaction, transaction],
        pendingRenewalInfo: [renewal],
        latestReceipt: "TUlJVHRnWUpLb1pJaHZjTkFRY0Nv"
    )

    static let request = VerifyReceiptRequest(
        receiptData: "TUlJVHRnWUpLb1pJaHZjTkFRY0Nv", password: "shared-secret", excludeOldTransactions: true
    )
}
