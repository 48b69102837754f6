import ReceiptRules
import Testing

/// One reason the rules can produce: an input that produces it, and the smallest change to that input that does not.
struct ReasonCase: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable, Equatable {
        case credit([String])
        case retry
    }

    typealias Input = (receipt: ReceiptContents, order: OrderContext, configuration: RulesConfiguration)

    var reason: RejectionReason
    var name: String
    var produces: Input
    var nearMiss: Input
    var nearMissOutcome: Outcome

    var testDescription: String { "\(reason.rawValue): \(name)" }
}

extension ReasonCase {
    static let all: [ReasonCase] = {
        let gems = Sample.purchase("1001")
        let ok = Sample.receipt([gems])
        let config = Sample.configuration()
        let order = Sample.order()
        let monthlyOrder = Sample.order(product: Sample.subscription)
        return [
            ReasonCase(
                reason: .sandboxNotAllowed, name: "user not on the allowlist",
                produces: (Sample.receipt([gems], environment: .sandbox), order,
                           Sample.configuration(sandboxPolicy: .allowlist(["reviewer"]))),
                nearMiss: (Sample.receipt([gems], environment: .sandbox), Sample.order(userId: "reviewer"),
                           Sample.configuration(sandboxPolicy: .allowlist(["reviewer"]))),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .bundleMismatch, name: "receipt of an app that is not configured",
                produces: (Sample.receipt([gems], bundleId: Sample.otherBundleId),
                           Sample.order(bundleId: Sample.otherBundleId), config),
                nearMiss: (Sample.receipt([gems], bundleId: Sample.otherBundleId),
                           Sample.order(bundleId: Sample.otherBundleId),
                           Sample.configuration(bundleIds: [Sample.bundleId, Sample.otherBundleId])),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .noPurchases, name: "empty receipt on the last retry attempt",
                produces: (Sample.receipt([]), Sample.order(attempt: 3), config),
                nearMiss: (Sample.receipt([]), Sample.order(attempt: 2), config),
                nearMissOutcome: .retry
            ),
            ReasonCase(
                reason: .transactionNotFound, name: "client transaction absent",
                produces: (ok, Sample.order(clientTransactionId: "1002"), config),
                nearMiss: (ok, Sample.order(clientTransactionId: "1001"), config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .transactionNotFound, name: "purchase 1 ms before the order time minus 5 minutes",
                produces: (Sample.receipt([Sample.purchase("1001", at: Sample.orderTimeMs - Sample.fiveMinutes - 1)]),
                           order, config),
                nearMiss: (Sample.receipt([Sample.purchase("1001", at: Sample.orderTimeMs - Sample.fiveMinutes)]),
                           order, config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .productMismatch, name: "receipt has only other products",
                produces: (ok, Sample.order(product: "com.example.coins"), config),
                nearMiss: (ok, order, config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .productMismatch, name: "client transaction bought another product",
                produces: (Sample.receipt([gems, Sample.purchase("1002", product: "com.example.coins")]),
                           Sample.order(clientTransactionId: "1002"), config),
                nearMiss: (Sample.receipt([gems, Sample.purchase("1002", product: "com.example.coins")]),
                           Sample.order(clientTransactionId: "1001"), config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .refunded, name: "the only purchase was cancelled",
                produces: (Sample.receipt([Sample.purchase("1001", cancelled: Sample.orderTimeMs + 2 * Sample.minute)]),
                           order, config),
                nearMiss: (ok, order, config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .expired, name: "subscription expired exactly at the order time",
                produces: (Sample.receipt([Sample.purchase("1001", product: Sample.subscription,
                                                           at: Sample.orderTimeMs - Sample.minute,
                                                           expires: Sample.orderTimeMs)]),
                           monthlyOrder, config),
                nearMiss: (Sample.receipt([Sample.purchase("1001", product: Sample.subscription,
                                                           at: Sample.orderTimeMs - Sample.minute,
                                                           expires: Sample.orderTimeMs + 1)]),
                           monthlyOrder, config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .accountMismatch, name: "the purchase carries another appAccountToken than the order",
                produces: (Sample.receipt([Self.withToken(gems, Self.tokenB)]), Self.withToken(order, Self.tokenA),
                           config),
                nearMiss: (Sample.receipt([Self.withToken(gems, Self.tokenA.uppercased())]),
                           Self.withToken(order, Self.tokenA), config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .accountMismatch, name: "the client transaction carries another appAccountToken",
                produces: (Sample.receipt([Self.withToken(gems, Self.tokenB)]),
                           Self.withToken(Sample.order(clientTransactionId: "1001"), Self.tokenA), config),
                nearMiss: (Sample.receipt([gems]),
                           Self.withToken(Sample.order(clientTransactionId: "1001"), Self.tokenA), config),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .familyShared, name: "a purchase shared through Family Sharing, FAMILY_SHARING=reject",
                produces: (Sample.receipt([Self.owned(gems, "FAMILY_SHARED")]), order, Self.rejectingFamily),
                nearMiss: (Sample.receipt([Self.owned(gems, "PURCHASED")]), order, Self.rejectingFamily),
                nearMissOutcome: .credit(["1001"])
            ),
            ReasonCase(
                reason: .familyShared, name: "the client transaction is shared through Family Sharing",
                produces: (Sample.receipt([Self.owned(gems, "FAMILY_SHARED")]),
                           Sample.order(clientTransactionId: "1001"), Self.rejectingFamily),
                nearMiss: (Sample.receipt([Self.owned(gems, "FAMILY_SHARED")]),
                           Sample.order(clientTransactionId: "1001"), config),
                nearMissOutcome: .credit(["1001"])
            ),
        ]
    }()

    static let rejectingFamily = RulesConfiguration(bundleIds: [Sample.bundleId], familySharing: .reject)

    static func owned(_ purchase: Purchase, _ ownership: String) -> Purchase {
        var purchase = purchase
        purchase.inAppOwnershipType = ownership
        return purchase
    }

    static let tokenA = "7f9c24e8-3b1a-4c5d-9e2f-0a1b2c3d4e5f"
    static let tokenB = "1d2e3f40-5a6b-4c7d-8e9f-a0b1c2d3e4f5"

    static func withToken(_ purchase: Purchase, _ token: String) -> Purchase {
        var purchase = purchase
        purchase.appAccountToken = token
        return purchase
    }

    static func withToken(_ order: OrderContext, _ token: String) -> OrderContext {
        var order = order
        order.appAccountToken = token
        return order
    }

    /// Who decides each reason. A switch without `default`, so a new reason does not compile until it is placed:
    /// either the rules produce it (and `all` must then hold a case for it), or the part named here does, and its
    /// tests cover it.
    static func producer(of reason: RejectionReason) -> Producer {
        switch reason {
        case .sandboxNotAllowed, .bundleMismatch, .noPurchases, .transactionNotFound, .productMismatch, .refunded,
            .expired, .accountMismatch, .familyShared:
            .rules
        // receipt_credit() in SQL, when no candidate is left (BatchCreditTests, QueueTests, ReplayRaceTests).
        case .alreadyCredited, .ownedByOtherUser:
            .ledger
        // OutcomeDecider, from Apple's status (OutcomeDeciderTests, RetryTests).
        case .invalidReceipt:
            .appleStatus
        // enqueue_receipt() and the worker's ReceiptInput check (ReceiptInputTests, ReceiptCorpusTests).
        case .malformedInput:
            .inputCheck
        // OutcomeDecider, from the signed-data verifier (SignedDataVerifierTests, SignedTransactionTests).
        case .invalidSignature:
            .signatureCheck
        // receipt_sweep() and receipt_complete(), at the last attempt (SchedulerTests); receipt_sweep(), at an
        // expected order's deadline (LostOrderTests).
        case .retriesExhausted, .notPurchased:
            .scheduler
        }
    }

    enum Producer {
        case rules, ledger, appleStatus, inputCheck, signatureCheck, scheduler
    }
}

@Suite("Every rejection reason of the rules, with a near miss")
struct RejectionReasonTests {
    @Test(arguments: ReasonCase.all)
    func produces(_ reasonCase: ReasonCase) throws {
        let (receipt, order, configuration) = reasonCase.produces
        let verdict = decide(receipt, order, configuration)
        #expect(verdict.decision.rejection == reasonCase.reason)
        let detail = try #require(verdict.decision.detail)
        #expect(!detail.isEmpty && detail.count < 300)
        #expect(verdict.environment == receipt.environment)
    }

    @Test(arguments: ReasonCase.all)
    func nearMissDoesNotProduce(_ reasonCase: ReasonCase) {
        let (receipt, order, configuration) = reasonCase.nearMiss
        let decision = decide(receipt, order, configuration).decision
        switch reasonCase.nearMissOutcome {
        case .credit(let ids): #expect(decision.candidateIds == ids)
        case .retry: #expect(decision.isRetry)
        }
    }

    @Test("every reason the rules decide has a case here, and no case is about a reason decided elsewhere")
    func everyReasonOfTheRulesIsCovered() {
        let covered = Set(ReasonCase.all.map(\.reason))
        let ofTheRules = Set(RejectionReason.allCases.filter { ReasonCase.producer(of: $0) == .rules })
        #expect(covered == ofTheRules)
    }

    @Test("the rules never answer with a reason another part decides", arguments: ReasonCase.all)
    func rulesStayInTheirLane(_ reasonCase: ReasonCase) {
        for (receipt, order, configuration) in [reasonCase.produces, reasonCase.nearMiss] {
            if let reason = decide(receipt, order, configuration).decision.rejection {
                #expect(ReasonCase.producer(of: reason) == .rules, "\(reason)")
            }
        }
    }
}
