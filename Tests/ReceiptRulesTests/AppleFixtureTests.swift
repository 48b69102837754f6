import AppleFixtureFiles
import Testing

@testable import ReceiptRules

/// RevenueCat's sample app receipt as Apple's sandbox verified it: 8 monthly periods of
/// com.revenuecat.monthly_4.99.1_week_intro renewing every 5 minutes on 2020-07-14, then one
/// com.revenuecat.annual_39.99.2_week_intro on 2020-07-22, each listed in both in_app and latest_receipt_info.
@Suite("Real Apple verifyReceipt response (RevenueCat sandbox)")
struct AppleFixtureTests {
    static let bundleId = "com.revenuecat.sampleapp"
    static let annual = "com.revenuecat.annual_39.99.2_week_intro"
    static let monthly = "com.revenuecat.monthly_4.99.1_week_intro"
    /// The annual purchase: 2020-07-22T17:39:06Z, expires 2020-07-22T18:39:06Z (sandbox: an hour).
    static let annualTransaction = "1000000696553650"
    static let annualPurchaseMs: Int64 = 1_595_439_546_000
    static let annualExpiresMs: Int64 = 1_595_443_146_000
    /// After every expiry in the receipt: 2020-07-23T00:00:00Z.
    static let afterEveryExpiryMs: Int64 = 1_595_462_400_000

    let fixture: AppleFixture
    let configuration = RulesConfiguration(bundleIds: [bundleId])

    init() throws {
        fixture = try AppleFixture(named: "revenuecat-sandbox-verifyReceipt-response.json")
    }

    func order(
        product: String,
        clientTransactionId: String? = nil,
        createdAtMs: Int64?,
        jobCreatedAtMs: Int64? = nil
    ) -> OrderContext {
        OrderContext(
            jobId: 1, orderId: "rc-order", userId: "rc-user", productId: product,
            clientTransactionId: clientTransactionId, bundleId: Self.bundleId, orderCreatedAtMs: createdAtMs,
            jobCreatedAtMs: jobCreatedAtMs ?? (createdAtMs ?? 0) + 2_000
        )
    }

    @Test(.needsAppleFixtures) func theFixtureIsWhatTheTestsAssume() {
        #expect(fixture.status == 0)
        #expect(fixture.receipt.environment == .sandbox)
        #expect(fixture.receipt.bundleId == Self.bundleId)
        #expect(fixture.inAppCount == 9 && fixture.latestReceiptInfoCount == 9)
    }

    @Test(.needsAppleFixtures) func inAppAndLatestReceiptInfoMergeToNinePurchasesNewestFirst() throws {
        let merged = VerdictRules.merge(fixture.receipt.entries)
        #expect(merged.count == 9)
        #expect(merged.map(\.transactionId) == [
            "1000000696553650", "1000000692906727", "1000000692905971", "1000000692905419", "1000000692902990",
            "1000000692902182", "1000000692901513", "1000000692879214", "1000000692878476",
        ])
        let annual = try #require(merged.first)
        #expect(annual.productId == Self.annual)
        #expect(annual.purchaseDateMs == Self.annualPurchaseMs)
        #expect(annual.expiresDateMs == Self.annualExpiresMs)
        #expect(annual.originalTransactionId == "1000000692878476")
        #expect(annual.webOrderLineItemId == "1000000054044800")
        #expect(merged.allSatisfy { !$0.isCancelled && $0.isSubscription })
    }

    @Test(.needsAppleFixtures) func annualOrderMadeJustBeforeThePurchaseCreditsIt() {
        let verdict = VerdictRules.decide(
            receipt: fixture.receipt,
            order: order(product: Self.annual, createdAtMs: Self.annualPurchaseMs - 90_000),
            configuration: configuration
        )
        #expect(verdict.environment == .sandbox)
        #expect(verdict.decision.candidateIds?.first == Self.annualTransaction)
        #expect(verdict.decision.candidateIds == [Self.annualTransaction])
        #expect(verdict.cancelledPurchases.isEmpty)
    }

    /// An order at 2020-07-14T21:40:00Z: the periods bought since 21:35 (order time minus 5 minutes) are candidates,
    /// newest first; the two bought around 19:35 are not.
    @Test(.needsAppleFixtures) func monthlyOrderCandidatesAreTheRecentPeriodsNewestFirst() {
        let verdict = VerdictRules.decide(
            receipt: fixture.receipt,
            order: order(product: Self.monthly, createdAtMs: 1_594_762_800_000),
            configuration: configuration
        )
        #expect(verdict.decision.candidateIds == [
            "1000000692906727", "1000000692905971", "1000000692905419", "1000000692902990", "1000000692902182",
            "1000000692901513",
        ])
    }

    @Test(.needsAppleFixtures, arguments: [UInt64(1), 2, 3, 4, 5])
    func shuffledEntriesGiveTheSameVerdict(seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        var shuffled = fixture.receipt
        shuffled.entries.shuffle(using: &generator)
        for product in [Self.annual, Self.monthly] {
            let order = order(product: product, createdAtMs: 1_594_762_800_000)
            #expect(
                VerdictRules.decide(receipt: shuffled, order: order, configuration: configuration)
                    == VerdictRules.decide(receipt: fixture.receipt, order: order, configuration: configuration)
            )
        }
    }

    @Test(.needsAppleFixtures) func orderAfterEveryExpiryIsExpired() throws {
        // Without the order's own time the job's creation time judges expiry, and the slack filter does not apply.
        for product in [Self.annual, Self.monthly] {
            let verdict = VerdictRules.decide(
                receipt: fixture.receipt,
                order: order(product: product, createdAtMs: nil, jobCreatedAtMs: Self.afterEveryExpiryMs),
                configuration: configuration
            )
            #expect(verdict.decision.rejection == .expired)
            #expect(try #require(verdict.decision.detail).contains("2020-07-23T00:00:00Z"))
        }
        let named = VerdictRules.decide(
            receipt: fixture.receipt,
            order: order(product: Self.annual, clientTransactionId: Self.annualTransaction,
                         createdAtMs: Self.afterEveryExpiryMs),
            configuration: configuration
        )
        #expect(named.decision.rejection == .expired)
        #expect(try #require(named.decision.detail).contains("\(Self.annualTransaction) (expired 2020-07-22T18:39:06Z)"))
    }

    @Test(.needsAppleFixtures) func annualExpiryBoundary() {
        let named = { (orderTimeMs: Int64) in
            VerdictRules.decide(
                receipt: fixture.receipt,
                order: order(product: Self.annual, clientTransactionId: Self.annualTransaction,
                             createdAtMs: orderTimeMs),
                configuration: configuration
            ).decision
        }
        #expect(named(Self.annualExpiresMs - 1).candidateIds == [Self.annualTransaction])
        #expect(named(Self.annualExpiresMs).rejection == .expired)
    }

    @Test(.needsAppleFixtures) func monthlyTransactionNamedForTheAnnualOrder() {
        let verdict = VerdictRules.decide(
            receipt: fixture.receipt,
            order: order(product: Self.annual, clientTransactionId: "1000000692906727",
                         createdAtMs: 1_594_764_480_000),
            configuration: configuration
        )
        #expect(verdict.decision.rejection == .productMismatch)
    }

    @Test(.needsAppleFixtures) func bundleAndSandboxPolicy() {
        let annualOrder = order(product: Self.annual, createdAtMs: Self.annualPurchaseMs)
        let otherApp = VerdictRules.decide(
            receipt: fixture.receipt, order: annualOrder,
            configuration: RulesConfiguration(bundleIds: ["com.example.app"])
        )
        #expect(otherApp.decision.rejection == .bundleMismatch)

        let noSandbox = VerdictRules.decide(
            receipt: fixture.receipt, order: annualOrder,
            configuration: RulesConfiguration(bundleIds: [Self.bundleId], sandboxPolicy: .reject)
        )
        #expect(noSandbox.decision.rejection == .sandboxNotAllowed)
        #expect(noSandbox.environment == .sandbox)
    }

    /// The detail formatter agrees with the dates Apple printed next to every `_ms` field.
    @Test(.needsAppleFixtures) func detailTimesMatchApplesPrintedDates() {
        #expect(fixture.printedPurchaseDates.count == 9)
        for (ms, printed) in fixture.printedPurchaseDates {
            let expected = printed.replacingOccurrences(of: " Etc/GMT", with: "Z")
                .replacingOccurrences(of: " ", with: "T")
            #expect(VerdictRules.Detail.time(ms) == expected)
        }
    }
}
