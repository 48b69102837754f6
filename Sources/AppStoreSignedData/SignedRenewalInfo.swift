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

    enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, autoRenewProductId, autoRenewStatus, expirationIntent
        case isInBillingRetryPeriod, environment
        case gracePeriodExpiresDateMs = "gracePeriodExpiresDate"
        case renewalDateMs = "renewalDate"
        case recentSubscriptionStartDateMs = "recentSubscriptionStartDate"
        case signedDateMs = "signedDate"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func milliseconds(_ key: CodingKeys) throws -> Int64? {
            try c.decodeIfPresent(Double.self, forKey: key).map { Int64($0.rounded(.down)) }
        }
        if let text = try? c.decodeIfPresent(String.self, forKey: .originalTransactionId) {
            originalTransactionId = text
        } else {
            originalTransactionId = try c.decodeIfPresent(Double.self, forKey: .originalTransactionId).map {
                String(Int64($0))
            }
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
    }
}
