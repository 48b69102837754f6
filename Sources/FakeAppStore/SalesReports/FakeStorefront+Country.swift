extension FakeStorefront {
    /// The two-letter country code a sales report names the storefront by.
    public var countryCode: String {
        switch code {
        case "USA": "US"
        case "GBR": "GB"
        case "DEU": "DE"
        case "JPN": "JP"
        case "CHN": "CN"
        default: String(code.prefix(2))
        }
    }

    /// `milliunits` of this storefront's currency as the report writes a price: "0.99", "-4.99", "150" (no cents
    /// in a currency without them).
    func decimalText(milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : ""
        let magnitude = milliunits.magnitude
        let whole = magnitude / 1000
        guard step < 1000 else { return "\(sign)\(whole)" }
        let cents = (magnitude % 1000) / 10
        return "\(sign)\(whole).\(cents < 10 ? "0" : "")\(cents)"
    }
}
