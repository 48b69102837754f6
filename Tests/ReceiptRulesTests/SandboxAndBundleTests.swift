import ReceiptRules
import Testing

@Suite("Sandbox policy")
struct SandboxPolicyTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var policy: SandboxPolicy
        var userId: String
        var creditsSandbox: Bool
        var testDescription: String { "\(policy) for \(userId)" }
    }

    static let cases: [Case] = [
        Case(policy: .accept, userId: "anyone", creditsSandbox: true),
        Case(policy: .reject, userId: "reviewer", creditsSandbox: false),
        Case(policy: .allowlist(["reviewer", "qa"]), userId: "reviewer", creditsSandbox: true),
        Case(policy: .allowlist(["reviewer", "qa"]), userId: "customer", creditsSandbox: false),
        Case(policy: .allowlist([]), userId: "reviewer", creditsSandbox: false),
    ]

    @Test(arguments: cases)
    func sandboxReceipt(_ testCase: Case) {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], environment: .sandbox),
            Sample.order(userId: testCase.userId),
            Sample.configuration(sandboxPolicy: testCase.policy)
        )
        #expect(verdict.environment == .sandbox)
        if testCase.creditsSandbox {
            #expect(verdict.decision.candidateIds == ["1001"])
        } else {
            #expect(verdict.decision.rejection == .sandboxNotAllowed)
        }
    }

    @Test(arguments: cases)
    func productionReceiptIgnoresThePolicy(_ testCase: Case) {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], environment: .production),
            Sample.order(userId: testCase.userId),
            Sample.configuration(sandboxPolicy: testCase.policy)
        )
        #expect(verdict.environment == .production)
        #expect(verdict.decision.candidateIds == ["1001"])
    }

    @Test func policyIsCheckedBeforeTheBundle() {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], environment: .sandbox, bundleId: Sample.otherBundleId),
            Sample.order(),
            Sample.configuration(sandboxPolicy: .reject)
        )
        #expect(verdict.decision.rejection == .sandboxNotAllowed)
    }

    @Test func allowlistDetailNamesTheUser() throws {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], environment: .sandbox),
            Sample.order(userId: "customer-42"),
            Sample.configuration(sandboxPolicy: .allowlist(["reviewer"]))
        )
        let detail = try #require(verdict.decision.detail)
        #expect(detail.contains("customer-42"))
        #expect(detail.contains("SANDBOX_ALLOWED_USERS"))
    }
}

@Suite("Bundle id")
struct BundleTests {
    @Test func receiptOfAnotherConfiguredAppThanTheOrder() throws {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], bundleId: Sample.otherBundleId),
            Sample.order(bundleId: Sample.bundleId),
            Sample.configuration(bundleIds: [Sample.bundleId, Sample.otherBundleId])
        )
        #expect(verdict.decision.rejection == .bundleMismatch)
        let detail = try #require(verdict.decision.detail)
        #expect(detail.contains(Sample.bundleId) && detail.contains(Sample.otherBundleId))
    }

    @Test func receiptAndOrderAgreeButTheAppIsNotConfigured() throws {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], bundleId: Sample.otherBundleId),
            Sample.order(bundleId: Sample.otherBundleId),
            Sample.configuration(bundleIds: [Sample.bundleId])
        )
        #expect(verdict.decision.rejection == .bundleMismatch)
        let detail = try #require(verdict.decision.detail)
        #expect(detail.contains(Sample.otherBundleId) && detail.contains("APPLE_BUNDLE_IDS"))
    }

    @Test func receiptWithoutBundleId() {
        let verdict = decide(Sample.receipt([Sample.purchase("1001")], bundleId: nil))
        #expect(verdict.decision.rejection == .bundleMismatch)
    }

    @Test func bundleIdsCompareExactly() {
        let verdict = decide(Sample.receipt([Sample.purchase("1001")], bundleId: Sample.bundleId.uppercased()))
        #expect(verdict.decision.rejection == .bundleMismatch)
    }

    @Test func oneOfSeveralConfiguredApps() {
        let verdict = decide(
            Sample.receipt([Sample.purchase("1001")], bundleId: Sample.otherBundleId),
            Sample.order(bundleId: Sample.otherBundleId),
            Sample.configuration(bundleIds: [Sample.bundleId, Sample.otherBundleId])
        )
        #expect(verdict.decision.candidateIds == ["1001"])
    }

    /// A refund in a genuine receipt of one of our apps is passed on even when this order cannot use the receipt;
    /// a receipt of an app we do not serve revokes nothing.
    @Test func cancellationsOfARejectedReceipt() {
        let refunded = Sample.purchase("1001", cancelled: Sample.orderTimeMs + 2 * Sample.minute)
        let ourAppOtherOrder = decide(
            Sample.receipt([refunded], bundleId: Sample.otherBundleId),
            Sample.order(bundleId: Sample.bundleId),
            Sample.configuration(bundleIds: [Sample.bundleId, Sample.otherBundleId])
        )
        #expect(ourAppOtherOrder.decision.rejection == .bundleMismatch)
        #expect(ourAppOtherOrder.cancelledPurchases.map(\.transactionId) == ["1001"])

        let foreignApp = decide(Sample.receipt([refunded], bundleId: "com.somebody.else"))
        #expect(foreignApp.decision.rejection == .bundleMismatch)
        #expect(foreignApp.cancelledPurchases.isEmpty)

        let sandboxRejected = decide(
            Sample.receipt([refunded], environment: .sandbox),
            Sample.order(),
            Sample.configuration(sandboxPolicy: .reject)
        )
        #expect(sandboxRejected.decision.rejection == .sandboxNotAllowed)
        #expect(sandboxRejected.cancelledPurchases.map(\.transactionId) == ["1001"])
    }
}
