/// The storefronts the fake App Store sells in, and how it prices a purchase in each: the purchase's `basePrice`
/// (US dollars, in milliunits) times the storefront's multiplier, in its currency, rounded to whole cents (whole yen).
/// Enough to show prices that differ by country, as Apple's price tiers do; not Apple's real tiers.
public struct FakeStorefront: Sendable, Hashable {
    /// Apple's three-letter code (the transaction's `storefront`).
    public var code: String
    /// Apple's storefront id (`storefrontId`).
    public var id: String
    /// ISO 4217 (`currency`).
    public var currency: String
    public var multiplier: Double
    /// The smallest step of a price in milliunits (10: cents; 1000: a currency without cents).
    public var step: Int64

    public static let all: [FakeStorefront] = [
        FakeStorefront(code: "USA", id: "143441", currency: "USD", multiplier: 1, step: 10),
        FakeStorefront(code: "GBR", id: "143444", currency: "GBP", multiplier: 0.8, step: 10),
        FakeStorefront(code: "DEU", id: "143443", currency: "EUR", multiplier: 0.9, step: 10),
        FakeStorefront(code: "JPN", id: "143462", currency: "JPY", multiplier: 150, step: 1000),
        FakeStorefront(code: "CHN", id: "143465", currency: "CNY", multiplier: 7, step: 1000),
    ]

    public static func named(_ code: String) -> FakeStorefront? {
        all.first { $0.code == code }
    }

    /// `basePrice` (USD milliunits) in this storefront's currency, milliunits, rounded to `step`; nil when it does
    /// not fit an Int64.
    public func price(basePrice: Int64) -> Int64? {
        let steps = (Double(basePrice) * multiplier / Double(step)).rounded()
        guard let whole = Int64(exactly: steps) else { return nil }
        let (price, overflow) = whole.multipliedReportingOverflow(by: step)
        return overflow ? nil : price
    }
}
