/// One Send Consumption Information v2 request the fake App Store accepted: for which transaction, app and
/// environment, and its JSON body exactly as received.
public struct FakeConsumptionAnswer: Sendable, Hashable, Codable {
    public var environment: String
    public var bundleId: String
    public var transactionId: String
    public var body: String
}
