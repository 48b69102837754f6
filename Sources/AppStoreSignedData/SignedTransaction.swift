import AppStoreModel
import Foundation

/// A StoreKit 2 transaction as the App Store signs it (JWSTransactionDecodedPayload), as far as this service reads
/// it. Unknown fields are ignored; dates are milliseconds since 1970 (Xcode writes them with a fraction, which is
/// dropped); ids are strings, but numbers are accepted (the lenient rules of every App Store model, `JSONModel`).
public struct SignedTransaction: Sendable, Hashable {
    public var transactionId: String?
    public var originalTransactionId: String?
    /// One per subscription period: the credit key of auto-renewable subscriptions.
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDateMs: Int64?
    public var originalPurchaseDateMs: Int64?
    public var expiresDateMs: Int64?
    public var quantity: Int?
    /// "Auto-Renewable Subscription", "Non-Consumable", "Consumable" or "Non-Renewing Subscription".
    public var type: String?
    /// The UUID the app passed to `purchase(options: [.appAccountToken(…)])`, lowercase.
    public var appAccountToken: String?
    /// "PURCHASED" or "FAMILY_SHARED".
    public var inAppOwnershipType: String?
    public var signedDateMs: Int64?
    /// 0: a refund for another reason; 1: a refund because of an issue in the app.
    public var revocationReason: Int?
    public var revocationDateMs: Int64?
    public var isUpgraded: Bool?
    /// "Production", "Sandbox", "Xcode" or "LocalTesting".
    public var environment: String?
    public var storefront: String?
    /// Apple's identifier of the storefront (143441 for the United States), beside its country code.
    public var storefrontId: String?
    /// "PURCHASE" or "RENEWAL".
    public var transactionReason: String?
    public var currency: String?
    /// In milliunits of `currency`.
    public var price: Int64?
    /// 1 introductory offer, 2 promotional offer, 3 offer code, 4 win-back offer.
    public var offerType: Int?
    /// FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT.
    public var offerDiscountType: String?
    /// REFUND_FULL, REFUND_PRORATED or FAMILY_REVOKE.
    public var revocationType: String?
    /// The share refunded, in milliunits (100000: all of it).
    public var revocationPercentage: Int?
    /// The billing plan of the period bought: BILLED_UPFRONT, or MONTHLY (a monthly plan with a 12-month commitment).
    public var billingPlanType: String?
    /// A plan with a commitment: which period of it this is, how many it has, when it ends, the price after it.
    public var commitmentInfo: Commitment?
    /// The app download transaction this purchase belongs to.
    public var appTransactionId: String?
    /// The offer's id and its ISO 8601 duration (P1M).
    public var offerIdentifier: String?
    public var offerPeriod: String?

    /// TransactionCommitmentInfo.
    public struct Commitment: Sendable, Hashable {
        /// The period bought is number `billingPeriodNumber` of `totalBillingPeriods` (1 to 12).
        public var billingPeriodNumber: Int?
        public var totalBillingPeriods: Int?
        public var commitmentExpiresDateMs: Int64?
        /// The price after the commitment, in milliunits of the transaction's `currency`.
        public var commitmentPrice: Int64?

        public init() {}
    }

    /// A transaction with no field set (tests, and `JSONModel`'s blank).
    public init() {}
}

extension SignedTransaction: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("transactionId", \.transactionId),
        .value("originalTransactionId", \.originalTransactionId),
        .value("webOrderLineItemId", \.webOrderLineItemId),
        .value("bundleId", \.bundleId),
        .value("productId", \.productId),
        .value("subscriptionGroupIdentifier", \.subscriptionGroupIdentifier),
        .milliseconds("purchaseDate", \.purchaseDateMs),
        .milliseconds("originalPurchaseDate", \.originalPurchaseDateMs),
        .milliseconds("expiresDate", \.expiresDateMs),
        .value("quantity", \.quantity, as: .native),
        .value("type", \.type),
        .value("appAccountToken", \.appAccountToken),
        .value("inAppOwnershipType", \.inAppOwnershipType),
        .milliseconds("signedDate", \.signedDateMs),
        .value("revocationReason", \.revocationReason, as: .native),
        .milliseconds("revocationDate", \.revocationDateMs),
        .value("isUpgraded", \.isUpgraded, as: .native),
        .value("environment", \.environment),
        .value("storefront", \.storefront),
        .value("storefrontId", \.storefrontId),
        .value("transactionReason", \.transactionReason),
        .value("currency", \.currency),
        .value("price", \.price, as: .native),
        .value("offerType", \.offerType, as: .native),
        .value("offerDiscountType", \.offerDiscountType),
        .value("revocationType", \.revocationType),
        .value("revocationPercentage", \.revocationPercentage, as: .native),
        .value("billingPlanType", \.billingPlanType),
        .value("commitmentInfo", \.commitmentInfo),
        .value("appTransactionId", \.appTransactionId),
        .value("offerIdentifier", \.offerIdentifier),
        .value("offerPeriod", \.offerPeriod),
    ]

    public static var blank: Self { SignedTransaction() }

    /// Decodes a verified payload.
    public init(payload: [UInt8]) throws(SignedDataError) {
        do {
            self = try SignedTransaction.decode(payload)
            appAccountToken = appAccountToken?.lowercased()
        } catch {
            throw SignedDataError(.malformed, "the signed transaction's payload does not decode: \(error)")
        }
    }
}

extension SignedTransaction.Commitment: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("billingPeriodNumber", \.billingPeriodNumber, as: .native),
        .value("totalBillingPeriods", \.totalBillingPeriods, as: .native),
        .milliseconds("commitmentExpiresDate", \.commitmentExpiresDateMs),
        .value("commitmentPrice", \.commitmentPrice, as: .native),
    ]

    public static var blank: Self { SignedTransaction.Commitment() }
}

extension SignedTransaction {
    /// The `transactionId` a JWS's payload names, read without checking the signature: for knowing when to stop
    /// reading pages, never for a decision (verify the JWS for that). nil when it is not a JWS of a transaction.
    public static func unverifiedTransactionId(_ jws: String) -> String? {
        guard let token = try? CompactJWS(jws) else { return nil }
        return (try? SignedTransaction(payload: token.payload))?.transactionId
    }
}
