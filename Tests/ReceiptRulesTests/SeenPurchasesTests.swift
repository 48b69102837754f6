import ReceiptRules
import Testing

/// Issue 37: which of an answer's other purchases are offered to the ledger as possible lost orders.
@Suite("Purchases seen beside an order")
struct SeenPurchasesTests {
    static let token = "5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c01"

    static func tokened(_ id: String, at date: Int64 = Sample.orderTimeMs, token: String? = token) -> Purchase {
        var purchase = Sample.purchase(id, at: date)
        purchase.appAccountToken = token
        return purchase
    }

    static func seen(
        _ entries: [Purchase], excluding: Set<String> = [], receipt: (([Purchase]) -> ReceiptContents)? = nil,
        configuration: RulesConfiguration = Sample.configuration(), order: OrderContext = Sample.order()
    ) -> [String] {
        VerdictRules.seenPurchases(
            receipt: receipt?(entries) ?? Sample.receipt(entries), order: order, configuration: configuration,
            excluding: excluding
        ).map(\.transactionId)
    }

    @Test("those with a UUID token, not the job's own, not cancelled, newest first")
    func filtered() {
        var cancelled = Self.tokened("4")
        cancelled.cancellationDateMs = Sample.orderTimeMs + Sample.minute
        let entries = [
            Self.tokened("1", at: Sample.orderTimeMs - Sample.minute),
            Self.tokened("2", at: Sample.orderTimeMs),
            Self.tokened("3", token: nil),
            cancelled,
            Self.tokened("5", token: "not-a-uuid-at-all-but-36-characters!"),
            Self.tokened("6", at: Sample.orderTimeMs + Sample.minute),
        ]
        #expect(Self.seen(entries, excluding: ["6"]) == ["2", "1"])
        #expect(Self.seen(entries) == ["6", "2", "1"])
    }

    @Test("at most 30 days before the order, and at most 20")
    func bounded() {
        let day: Int64 = 86_400_000
        let old = [Self.tokened("old", at: Sample.orderTimeMs - 31 * day), Self.tokened("edge", at: Sample.orderTimeMs - 30 * day)]
        #expect(Self.seen(old) == ["edge"])
        let many = (0..<50).map { Self.tokened("t\($0)", at: Sample.orderTimeMs - Int64($0) * Sample.minute) }
        let seen = Self.seen(many)
        #expect(seen.count == VerdictRules.seenPurchasesLimit)
        #expect(seen.first == "t0" && seen.last == "t19")
    }

    @Test("none from another app's answer, nor from an environment the job's customer may not use")
    func onlyOurs() {
        let entries = [Self.tokened("1")]
        #expect(Self.seen(entries, receipt: { Sample.receipt($0, bundleId: Sample.otherBundleId) }).isEmpty)
        #expect(Self.seen(entries, receipt: { Sample.receipt($0, bundleId: nil) }).isEmpty)
        #expect(Self.seen(entries, order: Sample.order(bundleId: Sample.otherBundleId)).isEmpty)
        let sandbox: ([Purchase]) -> ReceiptContents = { Sample.receipt($0, environment: .sandbox) }
        #expect(Self.seen(entries, receipt: sandbox, configuration: Sample.configuration(sandboxPolicy: .reject)).isEmpty)
        #expect(Self.seen(entries, receipt: sandbox) == ["1"])
    }

    @Test("the token's spelling: 8-4-4-4-12 hexadecimal digits, either case")
    func uuidShape() {
        #expect(Self.seen([Self.tokened("1", token: Self.token.uppercased())]) == ["1"])
        for bad in ["", "5b0a2f3e6a3c4c1b9a576f3d2b8e9c01", "5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c0g",
                    "5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c011", "5b0a2f3e+6a3c-4c1b-9a57-6f3d2b8e9c01"] {
            #expect(Self.seen([Self.tokened("1", token: bad)]).isEmpty, "\(bad)")
        }
    }
}
