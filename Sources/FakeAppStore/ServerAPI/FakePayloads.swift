import Foundation

/// The JSON the fake signs: a transaction (JWSTransactionDecodedPayload), a subscription's renewal info
/// (JWSRenewalInfoDecodedPayload) and a V2 notification (ResponseBodyV2DecodedPayload), with the field names of
/// Apple's documentation. Written here rather than taken
/// from the verifier's model, so that a misspelled field on either side shows in the tests.
enum FakePayloads {
    struct Transaction: Encodable {
        var transactionId: String
        var originalTransactionId: String
        var webOrderLineItemId: String?
        var bundleId: String
        var productId: String
        var subscriptionGroupIdentifier: String?
        var purchaseDate: Int64
        var originalPurchaseDate: Int64
        var expiresDate: Int64?
        var quantity: Int
        var type: String
        var appAccountToken: String?
        var inAppOwnershipType = "PURCHASED"
        var signedDate: Int64
        var revocationReason: Int?
        var revocationDate: Int64?
        var environment: String
        var transactionReason: String
        var storefront = "USA"
        var storefrontId = "143441"
        /// In milliunits of `currency`: the purchase's base price in its storefront (FakeStorefront).
        var price: Int64?
        var currency: String?
    }

    struct RenewalInfo: Encodable {
        var originalTransactionId: String
        var productId: String
        var autoRenewProductId: String
        /// 1 on, 0 off.
        var autoRenewStatus: Int
        /// Why it expired (1 cancelled, 2 billing error, 3 price increase refused, 4 product unavailable, 5 other);
        /// only once expired.
        var expirationIntent: Int?
        var isInBillingRetryPeriod = false
        var gracePeriodExpiresDate: Int64?
        var priceIncreaseStatus: Int?
        var renewalDate: Int64?
        var recentSubscriptionStartDate: Int64
        var environment: String
        var signedDate: Int64
    }

    struct Notification: Encodable {
        struct Data: Encodable {
            var appAppleId: Int64?
            var bundleId: String
            var bundleVersion = "1"
            var environment: String
            /// Absent in a TEST notification.
            var signedTransactionInfo: String?
            /// Auto-renewable subscriptions only.
            var signedRenewalInfo: String?
            /// Auto-renewable subscriptions only: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
            var status: Int?
            /// CONSUMPTION_REQUEST only.
            var consumptionRequestReason: String?
        }

        /// RENEWAL_EXTENSION SUMMARY's `summary`, in place of `data`.
        struct Summary: Encodable {
            var environment: String
            var appAppleId: Int64?
            var bundleId: String
            var productId: String
            var requestIdentifier: String
            var storefrontCountryCodes: [String]?
            var succeededCount: Int64
            var failedCount: Int64
        }

        var notificationType: String
        var subtype: String?
        var notificationUUID: String
        var data: Data?
        var summary: Summary?
        var version = "2.0"
        var signedDate: Int64
    }

    /// JWSAppTransactionDecodedPayload.
    struct AppTransaction: Encodable {
        var receiptType: String
        var appAppleId: Int64?
        var bundleId: String
        var applicationVersion: String
        var receiptCreationDate: Int64
        var originalPurchaseDate: Int64
        var originalApplicationVersion: String
        var deviceVerification: String
        var deviceVerificationNonce: String
        var appTransactionId: String
        var originalPlatform: String
    }

    static func transaction(_ signed: SignedPurchase, originalPurchaseDate: Int64, signedDate: Int64) -> Transaction {
        let purchase = signed.purchase
        let isSubscription = purchase.type == "Auto-Renewable Subscription"
        let storefront = FakeStorefront.named(purchase.storefront)
        return Transaction(
            transactionId: signed.transactionId,
            originalTransactionId: signed.originalTransactionId,
            webOrderLineItemId: purchase.webOrderLineItemId,
            bundleId: purchase.bundleId,
            productId: purchase.productId,
            subscriptionGroupIdentifier: isSubscription ? "21000000" : nil,
            purchaseDate: purchase.purchaseDate ?? signedDate,
            originalPurchaseDate: originalPurchaseDate,
            expiresDate: purchase.expiresDate,
            quantity: purchase.quantity,
            type: purchase.type,
            appAccountToken: purchase.appAccountToken,
            signedDate: signedDate,
            revocationReason: purchase.revocationReason,
            revocationDate: purchase.revocationDate,
            environment: purchase.environment,
            transactionReason: signed.transactionId == signed.originalTransactionId ? "PURCHASE" : "RENEWAL",
            storefront: storefront?.code ?? purchase.storefront,
            storefrontId: storefront?.id ?? "",
            price: storefront?.price(basePrice: purchase.basePrice),
            currency: storefront?.currency
        )
    }

    /// The notification Apple sends for a new purchase: REFUND when it is revoked, SUBSCRIBED (INITIAL_BUY) or
    /// DID_RENEW for subscriptions, ONE_TIME_CHARGE otherwise.
    static func notificationType(for signed: SignedPurchase) -> (type: String, subtype: String?) {
        if signed.purchase.revocationDate != nil { return ("REFUND", nil) }
        guard signed.purchase.type == "Auto-Renewable Subscription" else { return ("ONE_TIME_CHARGE", nil) }
        return signed.transactionId == signed.originalTransactionId ? ("SUBSCRIBED", "INITIAL_BUY") : ("DID_RENEW", nil)
    }

    /// A stable made-up App Store id per bundle id; Apple leaves it out in the sandbox.
    static func appAppleId(bundleId: String, environment: String) -> Int64? {
        guard environment == "Production" else { return nil }
        return 1_000_000_000 + Int64(bundleId.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) % 1_000_000_000 })
    }

    static func json(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }
}
