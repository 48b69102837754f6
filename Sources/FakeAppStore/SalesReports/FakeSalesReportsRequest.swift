/// The body of `POST /fake/sales-reports`, for tests and demos in another process: each part optional, applied in
/// this order. Answers `{"ok": true}`, or 400 with the reason.
///
/// ```json
/// {"reset": true, "hold": ["2026-11-24"], "release": ["2026-11-23"], "skus": {"coins.100": "COINS100"},
///  "plant": [{"omitTransaction": {"_0": "2000000000000001"}},
///            {"extraLine": {"day": "2026-11-23", "line": {"sku": "coins.100", "title": "coins.100",
///              "productType": "IA1", "units": 1, "customerPrice": "0.99", "developerProceeds": "0.69",
///              "currency": "USD", "countryCode": "US", "parentIdentifier": "com.example.app"}}},
///            {"units": {"day": "2026-11-23", "sku": "coins.100", "countryCode": "US", "units": 5}},
///            {"price": {"day": "2026-11-23", "sku": "coins.100", "countryCode": "US", "customerPrice": "1.99"}}]}
/// ```
struct FakeSalesReportsRequest: Decodable {
    var reset: Bool?
    var hold: [String]?
    var release: [String]?
    var skus: [String: String]?
    var plant: [FakeSalesDifference]?

    /// Applies the request to `reports`.
    func apply(to reports: FakeSalesReports) throws(FakeAppStoreError) {
        if reset == true { reports.reset() }
        for day in hold ?? [] { try reports.hold(day: day) }
        for day in release ?? [] { reports.release(day: day) }
        for (product, sku) in (skus ?? [:]).sorted(by: { $0.key < $1.key }) {
            try reports.setSKU(sku, forProduct: product)
        }
        for difference in plant ?? [] { try reports.plant(difference) }
    }
}
