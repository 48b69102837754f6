/// Where a purchase was made. Apple's `environment` values.
public enum PurchaseEnvironment: String, Sendable, Hashable, Codable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// Xcode's and StoreKit local testing's (data accepted only with APPSTORE_ALLOW_TEST_ENVIRONMENTS=on): credited
    /// under their own names, never as Sandbox or Production, and refused as Sandbox is by SANDBOX_POLICY.
    case xcode = "Xcode"
    case localTesting = "LocalTesting"
}

/// One purchase, normalised from whatever reported it (verifyReceipt today; the App Store Server API or a StoreKit 2
/// signed transaction later). All dates are milliseconds since 1970, as Apple's `_ms` fields.
public struct Purchase: Sendable, Hashable {
    public var transactionId: String
    /// The first transaction of the purchase chain (restores and renewals share it). Equals `transactionId`
    /// when the source gives none.
    public var originalTransactionId: String
    /// One per subscription period; identical across restores of that period.
    public var webOrderLineItemId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64?
    /// Set for subscriptions only.
    public var expiresDateMs: Int64?
    /// Set when Apple refunded or revoked the purchase.
    public var cancellationDateMs: Int64?
    public var cancellationReason: String?
    /// The appAccountToken a StoreKit 2 purchase carries (a UUID, lowercase): the app's own account id for it.
    public var appAccountToken: String?
    /// Apple's `inAppOwnershipType`: PURCHASED (the user bought it) or FAMILY_SHARED (a family member did and shares
    /// it through Family Sharing); nil when the source does not say (older receipts).
    public var inAppOwnershipType: String?
    /// What Apple charged, in milliunits of `currency` (signed transactions and Server API answers; receipts: nil).
    public var priceMilliunits: Int64?
    public var currency: String?
    /// The App Store's country (ISO 3166-1 alpha-3).
    public var storefront: String?
    /// The App Store storefront's id (StoreKit 2's `storefrontId`, e.g. `143441`), beside its country code.
    public var storefrontId: String?
    /// Apple's `offerType` (1 introductory, 2 promotional, 3 offer code, 4 win-back) and `offerDiscountType`.
    public var offerType: Int?
    public var offerDiscountType: String?
    /// PURCHASE or RENEWAL.
    public var transactionReason: String?
    /// Apple's `billingPlanType` of the period bought (BILLED_UPFRONT, MONTHLY), and when Apple signed the transaction
    /// (signed transactions and Server API answers; receipts: nil). Issue 23.
    public var billingPlanType: String?
    public var signedDateMs: Int64?

    public init(
        transactionId: String,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        productId: String,
        quantity: Int = 1,
        purchaseDateMs: Int64?,
        expiresDateMs: Int64? = nil,
        cancellationDateMs: Int64? = nil,
        cancellationReason: String? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: String? = nil,
        priceMilliunits: Int64? = nil,
        currency: String? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        offerType: Int? = nil,
        offerDiscountType: String? = nil,
        transactionReason: String? = nil,
        billingPlanType: String? = nil,
        signedDateMs: Int64? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.productId = productId
        self.quantity = quantity
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.priceMilliunits = priceMilliunits
        self.currency = currency
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.transactionReason = transactionReason
        self.billingPlanType = billingPlanType
        self.signedDateMs = signedDateMs
    }

    /// False when both the order and the purchase name an account token and the two differ (StoreKit 2's way of
    /// tying a purchase to the app's account; a purchase without one, or an order without one, is not judged).
    public func matchesAccount(of order: OrderContext) -> Bool {
        guard let expected = order.appAccountToken, let actual = appAccountToken else { return true }
        return expected.lowercased() == actual.lowercased()
    }

    public var isCancelled: Bool { cancellationDateMs != nil }
    /// Shared by a family member through Family Sharing (`FAMILY_SHARING` decides whether it is credited).
    public var isFamilyShared: Bool { inAppOwnershipType == "FAMILY_SHARED" }
    public var isSubscription: Bool { expiresDateMs != nil }
}

/// What a source said about one receipt that it accepted as genuine (verifyReceipt status 0).
public struct ReceiptContents: Sendable, Hashable {
    /// Where the receipt was actually verified (never the client's claim).
    public var environment: PurchaseEnvironment
    public var bundleId: String?
    /// Every purchase entry the source listed, in any order, duplicates included (for verifyReceipt:
    /// `receipt.in_app` followed by `latest_receipt_info`). The rules merge them by transaction id.
    public var entries: [Purchase]

    public init(environment: PurchaseEnvironment, bundleId: String?, entries: [Purchase]) {
        self.environment = environment
        self.bundleId = bundleId
        self.entries = entries
    }
}
