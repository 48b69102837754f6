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
        ]
    }()

    /// The reasons only other parts produce: the ledger (already credited, owned by another user), the App Store
    /// client (invalid receipt, malformed input) and the scheduler (retries exhausted).
    static let producedElsewhere: Set<RejectionReason> = [
        .alreadyCredited, .ownedByOtherUser, .invalidReceipt, .malformedInput, .retriesExhausted,
    ]
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

    @Test func everyReasonOfTheRulesIsCovered() {
        let covered = Set(ReasonCase.all.map(\.reason))
        #expect(covered.union(ReasonCase.producedElsewhere) == Set(RejectionReason.allCases))
        #expect(covered.isDisjoint(with: ReasonCase.producedElsewhere))
    }
}
