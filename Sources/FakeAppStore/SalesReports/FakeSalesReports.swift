import AppStoreModel
import Foundation
import Synchronization

/// The Summary Sales Reports the fake serves at `GET /v1/salesReports`, made from the purchases it holds
/// (`PurchaseStore`), as Apple makes its own from what it sold: per day of the report's time zone (Pacific time, as
/// for a worldwide agreement), Production purchases only, one line per product, country, currency and price with the
/// units summed; a purchase refunded that day makes a line of negative units and negative price. A day is served
/// once it is over, unless held (`hold`: Apple's 404 until the report is ready); a day with no line is Apple's 404
/// "no sales". Differences can be planted (`plant`) for a reconciliation to find.
///
/// ```swift
/// try server.salesReports.plant(.omitTransaction(added[0].transactionId))
/// try server.salesReports.hold(day: "2026-11-24")
/// ```
public final class FakeSalesReports: Sendable {
    /// Planted differences, held days and SKU names kept at most (each).
    public static let maximumPlanted = 10_000
    public static let pacific = TimeZone(identifier: "America/Los_Angeles") ?? TimeZone(secondsFromGMT: -8 * 3600)!

    let store: PurchaseStore
    /// The vendor number the reports are filed under.
    public let vendorNumber: String
    /// The time zone the reports' days follow.
    public let timeZone: TimeZone

    private struct Plan {
        var held: Set<String> = []
        var differences: [FakeSalesDifference] = []
        /// Product id to the SKU the report names it by (Apple's SKU column is the product ID unless told here).
        var skus: [String: String] = [:]
    }

    private let plan = Mutex(Plan())

    init(store: PurchaseStore, vendorNumber: String, timeZone: TimeZone = FakeSalesReports.pacific) {
        self.store = store
        self.vendorNumber = vendorNumber
        self.timeZone = timeZone
    }

    /// `day`'s report is not ready: requests get Apple's 404 until `release(day:)`.
    public func hold(day: String) throws(FakeAppStoreError) {
        _ = try window(of: day)
        try change { (plan: inout Plan) throws(FakeAppStoreError) in
            guard plan.held.count < Self.maximumPlanted else { throw Self.full }
            plan.held.insert(day)
        }
    }

    public func release(day: String) {
        plan.withLock { _ = $0.held.remove(day) }
    }

    /// Plants `difference` in the reports served from now on.
    public func plant(_ difference: FakeSalesDifference) throws(FakeAppStoreError) {
        try Self.check(difference)
        if case .extraLine(let day, _) = difference { _ = try window(of: day) }
        if case .units(let day, _, _, _) = difference { _ = try window(of: day) }
        if case .price(let day, _, _, _) = difference { _ = try window(of: day) }
        try change { (plan: inout Plan) throws(FakeAppStoreError) in
            guard plan.differences.count < Self.maximumPlanted else { throw Self.full }
            plan.differences.append(difference)
        }
    }

    /// The report names `productId` by `sku` (App Store Connect's SKU differs from the product id).
    public func setSKU(_ sku: String, forProduct productId: String) throws(FakeAppStoreError) {
        try Self.checkText(sku, "sku")
        try change { (plan: inout Plan) throws(FakeAppStoreError) in
            guard plan.skus.count < Self.maximumPlanted || plan.skus[productId] != nil else { throw Self.full }
            plan.skus[productId] = sku
        }
    }

    /// Forgets planted differences, held days and SKU names.
    public func reset() {
        plan.withLock { $0 = Plan() }
    }

    /// The lines of `day`'s report, planted differences applied, in a stable order.
    public func lines(day: String) throws(FakeAppStoreError) -> [FakeSalesLine] {
        let (start, end) = try window(of: day)
        let plan = plan.withLock { $0 }
        let omitted = Set(plan.differences.compactMap { if case .omitTransaction(let id) = $0 { id } else { nil } })
        var units: [LineKey: Int64] = [:]
        for signed in store.purchases where signed.purchase.environment == "Production" {
            guard !omitted.contains(signed.transactionId),
                let storefront = FakeStorefront.named(signed.purchase.storefront),
                let price = storefront.price(basePrice: signed.purchase.basePrice)
            else { continue }
            let purchase = signed.purchase
            let quantity = Int64(max(1, purchase.quantity))
            let key = LineKey(
                sku: plan.skus[purchase.productId] ?? purchase.productId, bundleId: purchase.bundleId,
                productType: Self.productType(purchase.type), storefront: storefront.code, price: price
            )
            if let bought = purchase.purchaseDate, bought >= start, bought < end {
                units[key, default: 0] += quantity
            }
            if let revoked = purchase.revocationDate, revoked >= start, revoked < end {
                units[LineKey(key, price: -price), default: 0] -= quantity
            }
        }
        var lines = units.filter { $0.value != 0 }.sorted { $0.key < $1.key }.compactMap { key, units in
            FakeStorefront.named(key.storefront).map { Self.line(key, units: units, storefront: $0) }
        }
        for difference in plan.differences {
            switch difference {
            case .extraLine(day, let line):
                lines.append(line)
            case .units(day, let sku, let country, let count):
                for index in lines.indices where lines[index].matches(sku: sku, countryCode: country) {
                    lines[index].units = count
                }
            case .price(day, let sku, let country, let price):
                for index in lines.indices where lines[index].matches(sku: sku, countryCode: country) {
                    lines[index].customerPrice = price
                }
            default:
                continue
            }
        }
        return lines
    }

    /// What `GET /v1/salesReports` answers for `day` at `now`: the report's text, or why there is none.
    enum Answer: Equatable {
        case report([UInt8])
        /// Held, or not over yet.
        case notReady
        case noSales
    }

    func answer(day: String, now: Date) throws(FakeAppStoreError) -> Answer {
        let (_, end) = try window(of: day)
        if plan.withLock({ $0.held.contains(day) }) || end > Int64(now.timeIntervalSince1970 * 1000) {
            return .notReady
        }
        let lines = try lines(day: day)
        return lines.isEmpty ? .noSales : .report(FakeSalesReportText.text(lines, day: day))
    }

    /// [start, end) of `day` (YYYY-MM-DD) in `timeZone`, milliseconds since 1970.
    func window(of day: String) throws(FakeAppStoreError) -> (Int64, Int64) {
        let parts = day.split(separator: "-").compactMap { Int($0) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        guard day.utf8.count == 10, parts.count == 3,
            let start = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2])),
            calendar.component(.day, from: start) == parts[2], calendar.component(.month, from: start) == parts[1],
            let end = calendar.date(byAdding: .day, value: 1, to: start)
        else {
            throw FakeAppStoreError(.invalidConfiguration, "a sales report day is YYYY-MM-DD, got '\(day.prefix(40))'")
        }
        return (Int64(start.timeIntervalSince1970 * 1000), Int64(end.timeIntervalSince1970 * 1000))
    }

    private func change(_ body: (inout Plan) throws(FakeAppStoreError) -> Void) throws(FakeAppStoreError) {
        try plan.withLock { (plan: inout Plan) throws(FakeAppStoreError) in try body(&plan) }
    }

    private static let full = FakeAppStoreError(
        .invalidConfiguration, "at most \(maximumPlanted) planted sales report differences, held days or SKUs"
    )

    /// Apple's product type identifier for a purchase's type.
    static func productType(_ type: String) -> String {
        switch type {
        case PurchaseStore.autoRenewable: SalesReportProductType.autoRenewableSubscription
        case "Non-Renewing Subscription": SalesReportProductType.nonRenewingSubscription
        default: SalesReportProductType.inAppPurchase
        }
    }

    private static func line(_ key: LineKey, units: Int64, storefront: FakeStorefront) -> FakeSalesLine {
        // Proceeds: 70 % of the price, in the currency's steps, positive on refund lines too (as Apple's).
        let proceeds = (key.price.magnitude * 7 / 10) / UInt64(storefront.step) * UInt64(storefront.step)
        return FakeSalesLine(
            sku: key.sku, productType: key.productType, units: units,
            customerPrice: storefront.decimalText(milliunits: key.price),
            developerProceeds: storefront.decimalText(milliunits: Int64(proceeds)), currency: storefront.currency,
            countryCode: storefront.countryCode, parentIdentifier: key.bundleId
        )
    }

    /// Text a planted line may hold: no tab or line break (it would break the file), at most 200 bytes.
    private static func checkText(_ text: String, _ name: String) throws(FakeAppStoreError) {
        guard !text.isEmpty, text.utf8.count <= 200, !text.contains(where: { $0 == "\t" || $0.isNewline }) else {
            throw FakeAppStoreError(.invalidConfiguration, "\(name) must be 1-200 bytes without tabs or line breaks")
        }
    }

    private static func check(_ difference: FakeSalesDifference) throws(FakeAppStoreError) {
        switch difference {
        case .extraLine(_, let line):
            for (text, name) in [
                (line.sku, "sku"), (line.title, "title"), (line.productType, "productType"),
                (line.customerPrice, "customerPrice"), (line.developerProceeds, "developerProceeds"),
                (line.currency, "currency"), (line.countryCode, "countryCode"),
                (line.parentIdentifier, "parentIdentifier"),
            ] {
                try checkText(text, name)
            }
        case .omitTransaction(let id):
            try checkText(id, "transactionId")
        case .units(_, let sku, let country, _):
            try checkText(sku, "sku")
            try checkText(country, "countryCode")
        case .price(_, let sku, let country, let price):
            try checkText(sku, "sku")
            try checkText(country, "countryCode")
            try checkText(price, "customerPrice")
        }
    }
}

/// What makes purchases one line of a report.
private struct LineKey: Hashable, Comparable {
    var sku: String
    var bundleId: String
    var productType: String
    var storefront: String
    /// Milliunits of the storefront's currency; negative for refunds.
    var price: Int64

    init(sku: String, bundleId: String, productType: String, storefront: String, price: Int64) {
        self.sku = sku
        self.bundleId = bundleId
        self.productType = productType
        self.storefront = storefront
        self.price = price
    }

    init(_ key: LineKey, price: Int64) {
        self = key
        self.price = price
    }

    static func < (a: LineKey, b: LineKey) -> Bool {
        (a.sku, a.storefront, a.productType, a.bundleId, a.price)
            < (b.sku, b.storefront, b.productType, b.bundleId, b.price)
    }
}

extension FakeSalesLine {
    /// A sales line (not a refund) of `sku` in `countryCode`.
    func matches(sku: String, countryCode: String) -> Bool {
        self.sku == sku && self.countryCode == countryCode && units > 0
    }
}
