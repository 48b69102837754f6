/// A purchase the fake App Store holds and serves through its App Store Server API: given by a test (Swift) or by
/// the demo and the benchmark (`POST /fake/transactions`, the same fields as JSON). Only `bundleId` and `productId`
/// are required; the fake fills in the rest as the App Store would.
public struct FakePurchase: Sendable, Hashable, Codable {
    /// "Production" or "Sandbox": the environment that knows it (the other answers 4040010).
    public var environment: String
    public var bundleId: String
    public var productId: String
    /// Assigned (16 digits, increasing) when nil.
    public var transactionId: String?
    /// The first transaction of its chain (a renewal's subscription, a restore's original); its own id when nil.
    /// A purchase naming an existing transaction here belongs to that transaction's customer.
    public var originalTransactionId: String?
    /// Subscriptions: one per period.
    public var webOrderLineItemId: String?
    /// The order id on the customer's e-mailed receipt (Look Up Order ID).
    public var orderId: String?
    /// Who bought it: purchases of one customer form one transaction history. When nil: the customer of
    /// `originalTransactionId`'s transaction, else a customer of its own.
    public var customerId: String?
    /// The UUID the app passed at purchase, lowercase.
    public var appAccountToken: String?
    /// "Consumable", "Non-Consumable", "Auto-Renewable Subscription" or "Non-Renewing Subscription".
    public var type: String
    public var quantity: Int
    /// Milliseconds since 1970; the time it is added when nil.
    public var purchaseDate: Int64?
    public var expiresDate: Int64?
    /// Set for a refunded purchase (its notification is then a REFUND).
    public var revocationDate: Int64?
    public var revocationReason: Int?
    /// Where it was bought: a `FakeStorefront` code (USA, GBR, DEU, JPN, CHN), which sets its currency and price.
    public var storefront: String
    /// Its price in US dollars, milliunits (990: $0.99), before the storefront's multiplier.
    public var basePrice: Int64

    public init(
        environment: String = "Production",
        bundleId: String,
        productId: String,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        orderId: String? = nil,
        customerId: String? = nil,
        appAccountToken: String? = nil,
        type: String = "Consumable",
        quantity: Int = 1,
        purchaseDate: Int64? = nil,
        expiresDate: Int64? = nil,
        revocationDate: Int64? = nil,
        revocationReason: Int? = nil,
        storefront: String = "USA",
        basePrice: Int64 = 990
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.orderId = orderId
        self.customerId = customerId
        self.appAccountToken = appAccountToken
        self.type = type
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.storefront = storefront
        self.basePrice = basePrice
    }

    enum CodingKeys: String, CodingKey {
        case environment, bundleId, productId, transactionId, originalTransactionId, webOrderLineItemId, orderId
        case customerId, appAccountToken, type, quantity, purchaseDate, expiresDate, revocationDate, revocationReason
        case storefront, basePrice
    }

    /// Decodes the JSON of `POST /fake/transactions`: absent fields take the defaults of `init`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            environment: try c.decodeIfPresent(String.self, forKey: .environment) ?? "Production",
            bundleId: try c.decode(String.self, forKey: .bundleId),
            productId: try c.decode(String.self, forKey: .productId),
            transactionId: try c.decodeIfPresent(String.self, forKey: .transactionId),
            originalTransactionId: try c.decodeIfPresent(String.self, forKey: .originalTransactionId),
            webOrderLineItemId: try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId),
            orderId: try c.decodeIfPresent(String.self, forKey: .orderId),
            customerId: try c.decodeIfPresent(String.self, forKey: .customerId),
            appAccountToken: try c.decodeIfPresent(String.self, forKey: .appAccountToken),
            type: try c.decodeIfPresent(String.self, forKey: .type) ?? "Consumable",
            quantity: try c.decodeIfPresent(Int.self, forKey: .quantity) ?? 1,
            purchaseDate: try c.decodeIfPresent(Int64.self, forKey: .purchaseDate),
            expiresDate: try c.decodeIfPresent(Int64.self, forKey: .expiresDate),
            revocationDate: try c.decodeIfPresent(Int64.self, forKey: .revocationDate),
            revocationReason: try c.decodeIfPresent(Int.self, forKey: .revocationReason),
            storefront: try c.decodeIfPresent(String.self, forKey: .storefront) ?? "USA",
            basePrice: try c.decodeIfPresent(Int64.self, forKey: .basePrice) ?? 990
        )
    }
}

/// A purchase as the fake holds it: every id assigned, and its signed transaction (the JWS the App Store Server API
/// serves, and a client would send to `enqueue_transaction`).
public struct SignedPurchase: Sendable, Hashable, Codable {
    public var purchase: FakePurchase
    public var transactionId: String
    public var originalTransactionId: String
    public var customerId: String
    public var signedTransaction: String
}
