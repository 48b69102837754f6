import Foundation

/// A subscription's renewal info as the App Store signs it (JWSRenewalInfoDecodedPayload), as far as this service
/// reads it. Dates are milliseconds since 1970; unknown fields are ignored.
public struct SignedRenewalInfo: Sendable, Hashable, Decodable {
    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    /// 1: on, 0: off.
    public var autoRenewStatus: Int?
    /// Why the subscription expired (1 cancelled, 2 billing error, 3 price increase refused, 4 product unavailable,
    /// 5 other).
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDateMs: Int64?
    public var renewalDateMs: Int64?
    public var recentSubscriptionStartDateMs: Int64?
    public var environment: String?
    public var signedDateMs: Int64?
    /// 0: a price increase the customer has not answered yet, 1: accepted (or one needing no consent).
    public var priceIncreaseStatus: Int?
    /// The next renewal's price in milliunits of `currency` (9990: 9.99).
    public var renewalPrice: Int64?
    /// ISO 4217 code of `renewalPrice`.
    public var currency: String?
    /// The offer the next renewal uses: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    public var offerIdentifier: String?
    /// ISO 8601 duration of the offer (P1M).
    public var offerPeriod: String?
    /// FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT.
    public var offerDiscountType: String?
    public var appTransactionId: String?
    /// The billing plan the next renewal uses (a monthly plan with a 12-month commitment, …), as Apple names it.
    public var renewalBillingPlanType: String?
    /// A billing plan with a commitment: what the customer committed to renew to.
    public var commitmentInfo: Commitment?
    /// The UUID the app associated with the customer (purchase(options:) or Set App Account Token), lowercase.
    public var appAccountToken: String?
    /// The win-back offers the customer may redeem now (their offer ids), as Apple lists them.
    public var eligibleWinBackOfferIds: [String]?

    /// RenewalCommitmentInfo: the renewal at the end of the commitment.
    public struct Commitment: Sendable, Hashable, Decodable {
        public var autoRenewProductId: String?
        /// 1: the commitment renews, 0: it does not.
        public var autoRenewStatus: Int?
        public var renewalBillingPlanType: String?
        public var renewalDateMs: Int64?
        /// In milliunits of the renewal info's `currency`.
        public var renewalPrice: Int64?

        enum CodingKeys: String, CodingKey {
            case autoRenewProductId = "commitmentAutoRenewProductId", autoRenewStatus = "commitmentAutoRenewStatus"
            case renewalBillingPlanType = "commitmentRenewalBillingPlanType"
            case renewalDateMs = "commitmentRenewalDate", renewalPrice = "commitmentRenewalPrice"
        }

        /// Numbers checked as the renewal info's are.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            autoRenewProductId = try c.decodeIfPresent(String.self, forKey: .autoRenewProductId)
            if let number = try c.decodeIfPresent(Double.self, forKey: .autoRenewStatus) {
                guard let value = Int(exactly: try CheckedNumber.integer(number, "commitmentAutoRenewStatus")) else {
                    throw SignedDataError(.malformed, "commitmentAutoRenewStatus \(number) is out of range")
                }
                autoRenewStatus = value
            }
            renewalBillingPlanType = try c.decodeIfPresent(String.self, forKey: .renewalBillingPlanType)
            if let number = try c.decodeIfPresent(Double.self, forKey: .renewalDateMs) {
                renewalDateMs = try CheckedNumber.milliseconds(number, "commitmentRenewalDate")
            }
            if let number = try c.decodeIfPresent(Double.self, forKey: .renewalPrice) {
                renewalPrice = try CheckedNumber.integer(number, "commitmentRenewalPrice")
            }
        }
    }

    enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, autoRenewProductId, autoRenewStatus, expirationIntent
        case isInBillingRetryPeriod, environment
        case gracePeriodExpiresDateMs = "gracePeriodExpiresDate"
        case renewalDateMs = "renewalDate"
        case recentSubscriptionStartDateMs = "recentSubscriptionStartDate"
        case signedDateMs = "signedDate"
        case priceIncreaseStatus, renewalPrice, currency, offerType, offerIdentifier, offerPeriod, offerDiscountType
        case appTransactionId, renewalBillingPlanType, commitmentInfo, appAccountToken, eligibleWinBackOfferIds
    }

    /// Numbers are checked: one that is no time in milliseconds (1e300, -1e300) or no id (1.5) is a
    /// `SignedDataError` (`malformed`), never a trap.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func milliseconds(_ key: CodingKeys) throws -> Int64? {
            guard let number = try c.decodeIfPresent(Double.self, forKey: key) else { return nil }
            return try CheckedNumber.milliseconds(number, key.stringValue)
        }
        if let text = try? c.decodeIfPresent(String.self, forKey: .originalTransactionId) {
            originalTransactionId = text
        } else if let number = try c.decodeIfPresent(Double.self, forKey: .originalTransactionId) {
            originalTransactionId = String(try CheckedNumber.integer(number, "originalTransactionId"))
        }
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        autoRenewProductId = try c.decodeIfPresent(String.self, forKey: .autoRenewProductId)
        autoRenewStatus = try c.decodeIfPresent(Int.self, forKey: .autoRenewStatus)
        expirationIntent = try c.decodeIfPresent(Int.self, forKey: .expirationIntent)
        isInBillingRetryPeriod = try c.decodeIfPresent(Bool.self, forKey: .isInBillingRetryPeriod)
        gracePeriodExpiresDateMs = try milliseconds(.gracePeriodExpiresDateMs)
        renewalDateMs = try milliseconds(.renewalDateMs)
        recentSubscriptionStartDateMs = try milliseconds(.recentSubscriptionStartDateMs)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        signedDateMs = try milliseconds(.signedDateMs)
        func integer(_ key: CodingKeys) throws -> Int? {
            guard let number = try c.decodeIfPresent(Double.self, forKey: key) else { return nil }
            guard let value = Int(exactly: try CheckedNumber.integer(number, key.stringValue)) else {
                throw SignedDataError(.malformed, "\(key.stringValue) \(number) is out of range")
            }
            return value
        }
        priceIncreaseStatus = try integer(.priceIncreaseStatus)
        if let number = try c.decodeIfPresent(Double.self, forKey: .renewalPrice) {
            renewalPrice = try CheckedNumber.integer(number, "renewalPrice")
        }
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        offerType = try integer(.offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        offerPeriod = try c.decodeIfPresent(String.self, forKey: .offerPeriod)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        renewalBillingPlanType = try c.decodeIfPresent(String.self, forKey: .renewalBillingPlanType)
        commitmentInfo = try c.decodeIfPresent(Commitment.self, forKey: .commitmentInfo)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)?.lowercased()
        eligibleWinBackOfferIds = try c.decodeIfPresent([String].self, forKey: .eligibleWinBackOfferIds)
    }
}
