/// The bodies and answers of Apple's renewal-date extensions (App Store Server API): Extend a Subscription Renewal
/// Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`), Extend Subscription Renewal Dates for All
/// Active Subscribers (`POST /inApps/v1/subscriptions/extend/mass`) and Get Status of Subscription Renewal Date
/// Extensions (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
public enum RenewalExtension {
    /// Apple's limits: 1 to 90 days, reason codes 0 (undeclared), 1 (customer satisfaction), 2 (other), 3 (service
    /// issue or outage); a subscription may be extended at most twice a year.
    public static let days: ClosedRange<Int> = 1...90
    public static let reasonCodes: ClosedRange<Int> = 0...3

    /// ExtendRenewalDateRequest.
    public struct Request: Codable, Sendable, Hashable {
        public var extendByDays: Int
        public var extendReasonCode: Int
        public var requestIdentifier: String

        public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String) {
            self.extendByDays = extendByDays
            self.extendReasonCode = extendReasonCode
            self.requestIdentifier = requestIdentifier
        }
    }

    /// MassExtendRenewalDateRequest: `storefrontCountryCodes` nil extends in every storefront.
    public struct MassRequest: Codable, Sendable, Hashable {
        public var extendByDays: Int
        public var extendReasonCode: Int
        public var requestIdentifier: String
        public var productId: String
        public var storefrontCountryCodes: [String]?

        public init(
            extendByDays: Int, extendReasonCode: Int, requestIdentifier: String, productId: String,
            storefrontCountryCodes: [String]?
        ) {
            self.extendByDays = extendByDays
            self.extendReasonCode = extendReasonCode
            self.requestIdentifier = requestIdentifier
            self.productId = productId
            self.storefrontCountryCodes = storefrontCountryCodes
        }
    }

    /// ExtendRenewalDateResponse: whether the period was extended, and from when (`effectiveDate`, milliseconds).
    public struct Response: Codable, Sendable, Hashable {
        public var originalTransactionId: String?
        public var webOrderLineItemId: String?
        public var success: Bool?
        public var effectiveDate: Int64?

        public init(originalTransactionId: String?, webOrderLineItemId: String?, success: Bool?, effectiveDate: Int64?) {
            self.originalTransactionId = originalTransactionId
            self.webOrderLineItemId = webOrderLineItemId
            self.success = success
            self.effectiveDate = effectiveDate
        }

        enum CodingKeys: String, CodingKey { case originalTransactionId, webOrderLineItemId, success, effectiveDate }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            originalTransactionId = try container.decodeLenientString(forKey: .originalTransactionId)
            webOrderLineItemId = try container.decodeLenientString(forKey: .webOrderLineItemId)
            success = try container.decodeLenientBool(forKey: .success)
            effectiveDate = try container.decodeLenientInt64(forKey: .effectiveDate)
        }
    }

    /// MassExtendRenewalDateResponse.
    public struct MassResponse: Codable, Sendable, Hashable {
        public var requestIdentifier: String?

        public init(requestIdentifier: String?) {
            self.requestIdentifier = requestIdentifier
        }
    }

    /// MassExtendRenewalDateStatusResponse: `complete` once Apple has tried every eligible subscription.
    public struct MassStatus: Codable, Sendable, Hashable {
        public var requestIdentifier: String?
        public var complete: Bool?
        public var completeDate: Int64?
        public var succeededCount: Int64?
        public var failedCount: Int64?

        public init(
            requestIdentifier: String?, complete: Bool?, completeDate: Int64?, succeededCount: Int64?,
            failedCount: Int64?
        ) {
            self.requestIdentifier = requestIdentifier
            self.complete = complete
            self.completeDate = completeDate
            self.succeededCount = succeededCount
            self.failedCount = failedCount
        }

        enum CodingKeys: String, CodingKey {
            case requestIdentifier, complete, completeDate, succeededCount, failedCount
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            requestIdentifier = try container.decodeLenientString(forKey: .requestIdentifier)
            complete = try container.decodeLenientBool(forKey: .complete)
            completeDate = try container.decodeLenientInt64(forKey: .completeDate)
            succeededCount = try container.decodeLenientInt64(forKey: .succeededCount)
            failedCount = try container.decodeLenientInt64(forKey: .failedCount)
        }
    }
}
