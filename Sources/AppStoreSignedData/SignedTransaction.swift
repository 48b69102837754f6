import Foundation

/// A StoreKit 2 transaction as the App Store signs it (JWSTransactionDecodedPayload), as far as this service reads
/// it. Unknown fields are ignored; dates are milliseconds since 1970 (Xcode writes them with a fraction, which is
/// dropped); ids are strings, but numbers are accepted.
public struct SignedTransaction: Sendable, Hashable, Decodable {
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
    /// "PURCHASE" or "RENEWAL".
    public var transactionReason: String?
    public var currency: String?
    /// In milliunits of `currency`.
    public var price: Int64?

    enum CodingKeys: String, CodingKey {
        case transactionId, originalTransactionId, webOrderLineItemId, bundleId, productId
        case subscriptionGroupIdentifier, quantity, type, appAccountToken, inAppOwnershipType, revocationReason
        case isUpgraded, environment, storefront, transactionReason, currency, price
        case purchaseDateMs = "purchaseDate"
        case originalPurchaseDateMs = "originalPurchaseDate"
        case expiresDateMs = "expiresDate"
        case signedDateMs = "signedDate"
        case revocationDateMs = "revocationDate"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String? {
            if let string = try? c.decodeIfPresent(String.self, forKey: key) { return string }
            return try c.decodeIfPresent(Double.self, forKey: key).map { String(Int64($0)) }
        }
        func milliseconds(_ key: CodingKeys) throws -> Int64? {
            try c.decodeIfPresent(Double.self, forKey: key).map { Int64($0.rounded(.down)) }
        }
        transactionId = try text(.transactionId)
        originalTransactionId = try text(.originalTransactionId)
        webOrderLineItemId = try text(.webOrderLineItemId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        subscriptionGroupIdentifier = try text(.subscriptionGroupIdentifier)
        purchaseDateMs = try milliseconds(.purchaseDateMs)
        originalPurchaseDateMs = try milliseconds(.originalPurchaseDateMs)
        expiresDateMs = try milliseconds(.expiresDateMs)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        type = try c.decodeIfPresent(String.self, forKey: .type)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)?.lowercased()
        inAppOwnershipType = try c.decodeIfPresent(String.self, forKey: .inAppOwnershipType)
        signedDateMs = try milliseconds(.signedDateMs)
        revocationReason = try c.decodeIfPresent(Int.self, forKey: .revocationReason)
        revocationDateMs = try milliseconds(.revocationDateMs)
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
    }

    /// Decodes a verified payload.
    public init(payload: [UInt8]) throws(SignedDataError) {
        do {
            self = try JSONDecoder().decode(SignedTransaction.self, from: Data(payload))
        } catch {
            throw SignedDataError(.malformed, "the signed transaction's payload does not decode: \(error)")
        }
    }
}
