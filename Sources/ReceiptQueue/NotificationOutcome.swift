import Foundation

/// What a worker writes back for one App Store Server Notification (`receipt_notification_apply()`'s `p_result`), as
/// `JobOutcome` is for a job: one field list, encoded under the names the SQL reads. Verified with what it says,
/// rejected (a signature or chain that does not hold, sandbox refused), or a retry (the revocation check could not be
/// made). Dates are milliseconds since 1970, as Apple gives them.
public struct NotificationOutcome: Sendable, Encodable, Hashable {
    public enum Kind: String, Sendable, Encodable, Hashable {
        case verified
        case rejected
        /// No verdict yet; costs the attempt.
        case retry
    }

    /// Why the worker rejected a notification itself (the database may reject a verified one too: `bundle_mismatch`,
    /// `app_mismatch`).
    public enum Rejection: String, Sendable, Encodable, Hashable {
        case invalidSignature = "invalid_signature"
        case sandboxNotAllowed = "sandbox_not_allowed"
    }

    public var kind: Kind
    public var reason: Rejection?
    public var error: String?
    /// For a retry: when to try again, and the workers' MAX_ATTEMPTS.
    public var retryInSeconds: Double?
    public var maxAttempts: Int?
    /// What the payload says (verified, or rejected for the sandbox policy).
    public var notification: Facts?
    public var transaction: Transaction?
    public var renewal: Renewal?
    /// The crediting rule the SQL cannot know, for a purchase the notification announces (issue 37): under
    /// SANDBOX_POLICY=allowlist, the users a sandbox purchase may be credited to.
    public var creditRules: CreditRules?

    public init(
        kind: Kind, reason: Rejection? = nil, error: String? = nil, retryInSeconds: Double? = nil,
        maxAttempts: Int? = nil, notification: Facts? = nil, transaction: Transaction? = nil, renewal: Renewal? = nil
    ) {
        self.kind = kind
        self.reason = reason
        self.error = error
        self.retryInSeconds = retryInSeconds
        self.maxAttempts = maxAttempts
        self.notification = notification
        self.transaction = transaction
        self.renewal = renewal
    }

    enum CodingKeys: String, CodingKey {
        case kind = "outcome", reason, error, retryInSeconds = "retry_in_seconds", maxAttempts = "max_attempts"
        case notification, transaction, renewal, creditRules = "credit_rules"
    }

    /// `credit_rules`: what receipt_announced_credit() must respect of the workers' configuration.
    public struct CreditRules: Sendable, Encodable, Hashable {
        /// SANDBOX_ALLOWED_USERS under SANDBOX_POLICY=allowlist (sorted); nil: any user.
        public var sandboxUsers: [String]?

        public init(sandboxUsers: [String]?) {
            self.sandboxUsers = sandboxUsers
        }

        enum CodingKeys: String, CodingKey {
            case sandboxUsers = "sandbox_users"
        }
    }

    /// The notification's own fields (ResponseBodyV2DecodedPayload and its `data`).
    public struct Facts: Sendable, Encodable, Hashable {
        public var uuid: String
        public var type: String
        public var subtype: String?
        public var environment: String?
        public var bundleId: String?
        public var appAppleId: Int64?
        public var signedDateMs: Int64
        /// `data.status`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int?
        /// `data.consumptionRequestReason` (CONSUMPTION_REQUEST).
        public var consumptionRequestReason: String?
        /// `appData`'s app transaction id (RESCIND_CONSENT: a notification about the app, not a purchase).
        public var appTransactionId: String?
        /// Where the app and environment were read: `data`, `summary`, `external_purchase_token`, `app_data`, or
        /// `unknown` (none of them: a shape this version does not know, kept and passed on as `unknown_shape`).
        public var shape: String?
        /// `summary` (RENEWAL_EXTENSION, SUMMARY): the mass extension it ends.
        public var summary: Summary?
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
        public var externalPurchaseId: String?
        public var tokenCreationDateMs: Int64?

        public init(
            uuid: String, type: String, subtype: String? = nil, environment: String? = nil, bundleId: String? = nil,
            appAppleId: Int64? = nil, signedDateMs: Int64, status: Int? = nil, consumptionRequestReason: String? = nil,
            appTransactionId: String? = nil
        ) {
            self.uuid = uuid
            self.type = type
            self.subtype = subtype
            self.environment = environment
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.signedDateMs = signedDateMs
            self.status = status
            self.consumptionRequestReason = consumptionRequestReason
            self.appTransactionId = appTransactionId
        }

        enum CodingKeys: String, CodingKey {
            case uuid, type, subtype, environment, bundleId = "bundle_id", appAppleId = "app_apple_id"
            case signedDateMs = "signed_date_ms", status, consumptionRequestReason = "consumption_request_reason"
            case appTransactionId = "app_transaction_id", shape, summary
            case externalPurchaseId = "external_purchase_id", tokenCreationDateMs = "token_creation_date_ms"
        }
    }

    /// What a RENEWAL_EXTENSION SUMMARY reports: Apple's counts for the mass extension `requestIdentifier`.
    public struct Summary: Sendable, Encodable, Hashable {
        public var requestIdentifier: String?
        public var productId: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?

        public init(
            requestIdentifier: String?, productId: String?, storefrontCountryCodes: [String]?, succeededCount: Int64?,
            failedCount: Int64?
        ) {
            self.requestIdentifier = requestIdentifier
            self.productId = productId
            self.storefrontCountryCodes = storefrontCountryCodes
            self.succeededCount = succeededCount
            self.failedCount = failedCount
        }

        enum CodingKeys: String, CodingKey {
            case requestIdentifier = "request_identifier", productId = "product_id"
            case storefrontCountryCodes = "storefront_country_codes", succeededCount = "succeeded_count"
            case failedCount = "failed_count"
        }
    }

    /// The signed transaction a notification carries.
    public struct Transaction: Sendable, Encodable, Hashable {
        public var transactionId: String?
        public var originalTransactionId: String?
        public var webOrderLineItemId: String?
        public var productId: String?
        public var quantity: Int?
        public var purchaseDateMs: Int64?
        public var expiresDateMs: Int64?
        public var revocationDateMs: Int64?
        public var revocationReason: Int?
        public var inAppOwnershipType: String?
        /// REFUND_FULL, REFUND_PRORATED, FAMILY_REVOKE; the share refunded in milliunits (100000: all of it).
        public var revocationType: String?
        public var revocationPercentage: Int?
        /// What Apple charged, in milliunits of `currency` (9990: 9.99), and the circumstances (issue 24).
        public var priceMilliunits: Int64?
        public var currency: String?
        public var storefront: String?
        public var offerType: Int?
        public var offerDiscountType: String?
        /// PURCHASE or RENEWAL.
        public var transactionReason: String?
        /// The offer's id and ISO 8601 duration.
        public var offerIdentifier: String?
        public var offerPeriod: String?
        /// BILLED_UPFRONT or MONTHLY (issue 23), and a plan with a commitment: the period bought is number
        /// `commitmentPeriod` of `commitmentPeriods`, the commitment ends at `commitmentExpiresDateMs`, the price after
        /// it is `commitmentPriceMilliunits`.
        public var billingPlanType: String?
        public var commitmentPeriod: Int?
        public var commitmentPeriods: Int?
        public var commitmentExpiresDateMs: Int64?
        public var commitmentPriceMilliunits: Int64?
        /// The app download transaction the purchase belongs to.
        public var appTransactionId: String?
        /// When Apple signed the transaction.
        public var signedDateMs: Int64?
        /// The UUID the app passed to `purchase(options:)`, lowercase: whose purchase it is, when the token is
        /// registered (issue 37).
        public var appAccountToken: String?
        /// Apple's storefront identifier (143441), beside `storefront`'s country code.
        public var storefrontId: String?

        public init(
            transactionId: String? = nil, originalTransactionId: String? = nil, webOrderLineItemId: String? = nil,
            productId: String? = nil, quantity: Int? = nil, purchaseDateMs: Int64? = nil, expiresDateMs: Int64? = nil,
            revocationDateMs: Int64? = nil, revocationReason: Int? = nil, inAppOwnershipType: String? = nil,
            revocationType: String? = nil, revocationPercentage: Int? = nil
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.webOrderLineItemId = webOrderLineItemId
            self.productId = productId
            self.quantity = quantity
            self.purchaseDateMs = purchaseDateMs
            self.expiresDateMs = expiresDateMs
            self.revocationDateMs = revocationDateMs
            self.revocationReason = revocationReason
            self.inAppOwnershipType = inAppOwnershipType
            self.revocationType = revocationType
            self.revocationPercentage = revocationPercentage
        }

        enum CodingKeys: String, CodingKey {
            case transactionId = "transaction_id", originalTransactionId = "original_transaction_id"
            case webOrderLineItemId = "web_order_line_item_id", productId = "product_id", quantity
            case purchaseDateMs = "purchase_date_ms", expiresDateMs = "expires_date_ms"
            case revocationDateMs = "revocation_date_ms", revocationReason = "revocation_reason"
            case inAppOwnershipType = "in_app_ownership_type"
            case revocationType = "revocation_type", revocationPercentage = "revocation_percentage"
            case priceMilliunits = "price_milliunits", currency, storefront, offerType = "offer_type"
            case offerDiscountType = "offer_discount_type", transactionReason = "transaction_reason"
            case offerIdentifier = "offer_identifier", offerPeriod = "offer_period"
            case billingPlanType = "billing_plan_type", commitmentPeriod = "commitment_period"
            case commitmentPeriods = "commitment_periods", commitmentExpiresDateMs = "commitment_expires_date_ms"
            case commitmentPriceMilliunits = "commitment_price_milliunits", appTransactionId = "app_transaction_id"
            case signedDateMs = "signed_date_ms", appAccountToken = "app_account_token"
            case storefrontId = "storefront_id"
        }
    }

    /// The signed renewal info a notification carries: what `receipt_subscription_apply()` keeps of a subscription.
    public struct Renewal: Sendable, Encodable, Hashable {
        public var originalTransactionId: String?
        public var productId: String?
        /// 1: renews, 0: auto-renew turned off.
        public var autoRenewStatus: Int?
        /// The product the next period renews to (a pending downgrade or crossgrade when not `productId`).
        public var autoRenewProductId: String?
        /// 1 voluntary, 2 billing error, 3 price increase not accepted, 4 product unavailable, 5 other.
        public var expirationIntent: Int?
        public var isInBillingRetryPeriod: Bool?
        public var gracePeriodExpiresDateMs: Int64?
        /// 0: a price increase not answered yet, 1: accepted (or needing no consent).
        public var priceIncreaseStatus: Int?
        /// In milliunits of `currency`, as Apple gives it.
        public var renewalPrice: Int64?
        public var currency: String?
        public var renewalDateMs: Int64?
        public var offerType: Int?
        public var offerIdentifier: String?
        public var signedDateMs: Int64?
        /// The next renewal's offer: its ISO 8601 duration and FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT.
        public var offerPeriod: String?
        public var offerDiscountType: String?
        public var appTransactionId: String?
        /// The plan the next renewal uses (issue 23), and what happens when a commitment ends (RenewalCommitmentInfo):
        /// whether it renews (1) or not (0), to which product and plan, when, at what price (milliunits of `currency`).
        public var renewalBillingPlanType: String?
        public var commitmentAutoRenewStatus: Int?
        public var commitmentAutoRenewProductId: String?
        public var commitmentRenewalBillingPlanType: String?
        public var commitmentRenewalDateMs: Int64?
        public var commitmentRenewalPrice: Int64?
        /// The app's UUID for the customer, lowercase, as the renewal info carries it.
        public var appAccountToken: String?
        /// The win-back offers the customer may redeem now.
        public var eligibleWinBackOfferIds: [String]?

        public init(
            originalTransactionId: String? = nil, productId: String? = nil, autoRenewStatus: Int? = nil,
            autoRenewProductId: String? = nil, expirationIntent: Int? = nil, isInBillingRetryPeriod: Bool? = nil,
            gracePeriodExpiresDateMs: Int64? = nil, priceIncreaseStatus: Int? = nil, renewalPrice: Int64? = nil,
            currency: String? = nil, renewalDateMs: Int64? = nil, offerType: Int? = nil, offerIdentifier: String? = nil,
            signedDateMs: Int64? = nil
        ) {
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.autoRenewStatus = autoRenewStatus
            self.autoRenewProductId = autoRenewProductId
            self.expirationIntent = expirationIntent
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDateMs = gracePeriodExpiresDateMs
            self.priceIncreaseStatus = priceIncreaseStatus
            self.renewalPrice = renewalPrice
            self.currency = currency
            self.renewalDateMs = renewalDateMs
            self.offerType = offerType
            self.offerIdentifier = offerIdentifier
            self.signedDateMs = signedDateMs
        }

        enum CodingKeys: String, CodingKey {
            case originalTransactionId = "original_transaction_id", productId = "product_id"
            case autoRenewStatus = "auto_renew_status", autoRenewProductId = "auto_renew_product_id"
            case expirationIntent = "expiration_intent", isInBillingRetryPeriod = "is_in_billing_retry_period"
            case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
            case priceIncreaseStatus = "price_increase_status", renewalPrice = "renewal_price", currency
            case renewalDateMs = "renewal_date_ms", offerType = "offer_type", offerIdentifier = "offer_identifier"
            case signedDateMs = "signed_date_ms"
            case offerPeriod = "offer_period", offerDiscountType = "offer_discount_type"
            case appTransactionId = "app_transaction_id", renewalBillingPlanType = "renewal_billing_plan_type"
            case commitmentAutoRenewStatus = "commitment_auto_renew_status"
            case commitmentAutoRenewProductId = "commitment_auto_renew_product_id"
            case commitmentRenewalBillingPlanType = "commitment_renewal_billing_plan_type"
            case commitmentRenewalDateMs = "commitment_renewal_date_ms", commitmentRenewalPrice = "commitment_renewal_price"
            case appAccountToken = "app_account_token", eligibleWinBackOfferIds = "eligible_win_back_offer_ids"
        }
    }
}

extension NotificationOutcome {
    /// The JSON `receipt_notification_apply()` takes (keys sorted, absent fields left out).
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
