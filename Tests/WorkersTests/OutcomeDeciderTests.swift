import AppStoreClient
import AppleFixtureFiles
import ReceiptQueue
import ReceiptRules
import Testing
import Workers

/// Jobs, receipts and Apple results built by hand, as a worker would hold them.
enum Sample {
    static let bundleId = "com.example.app"
    static let product = "com.example.gems"
    static let leaseToken = "6f1c1a2e-8a0b-4d3e-9f55-2b7c0d9e4a11"
    /// 2023-11-14T22:13:20Z.
    static let orderTimeMs: Int64 = 1_700_000_000_000
    static let minute: Int64 = 60_000

    static let rules = RulesConfiguration(bundleIds: [bundleId])
    static let retry = RetryPolicy()
    static let decider = OutcomeDecider(rules: rules, retry: retry)

    static func job(
        attempt: Int = 1,
        clientTransactionId: String? = nil,
        bundleId: String = bundleId,
        orderCreatedAtMs: Int64? = orderTimeMs,
        jobCreatedAtMs: Int64 = orderTimeMs + minute
    ) -> ClaimedJob {
        ClaimedJob(
            id: 42,
            leaseToken: leaseToken,
            order: OrderContext(
                jobId: 42, orderId: "order-42", userId: "user-1", productId: product,
                clientTransactionId: clientTransactionId, bundleId: bundleId, orderCreatedAtMs: orderCreatedAtMs,
                jobCreatedAtMs: jobCreatedAtMs, attempt: attempt
            ),
            receiptData: "TUlJ",
            receiptHash: "3b1f0c9a"
        )
    }

    static func purchase(
        _ transactionId: String,
        product: String = product,
        minutesAfterOrder: Int64 = 1,
        cancelledMs: Int64? = nil
    ) -> Purchase {
        Purchase(
            transactionId: transactionId, productId: product,
            purchaseDateMs: orderTimeMs + minutesAfterOrder * minute, cancellationDateMs: cancelledMs,
            cancellationReason: cancelledMs == nil ? nil : "0"
        )
    }

    static func receipt(
        _ entries: [Purchase],
        environment: PurchaseEnvironment = .production,
        bundleId: String? = bundleId,
        status: Int = 0
    ) -> AppStoreResult {
        .receipt(ReceiptContents(environment: environment, bundleId: bundleId, entries: entries), status: status)
    }

    static func failure(
        _ cause: AppStoreFailure.Cause,
        message: String = "test failure",
        appleStatus: Int? = nil,
        httpStatus: Int? = nil,
        retryAfterSeconds: Double? = nil
    ) -> AppStoreFailure {
        AppStoreFailure(
            cause: cause, message: message, endpoint: .production, appleStatus: appleStatus, httpStatus: httpStatus,
            retryAfterSeconds: retryAfterSeconds
        )
    }
}

@Suite("OutcomeDecider")
struct OutcomeDeciderTests {
    let decider = Sample.decider

    @Test("a receipt that credits: verified, with the candidates newest first and the environment")
    func verified() {
        let result = Sample.receipt(
            [
                Sample.purchase("1001", minutesAfterOrder: 1),
                Sample.purchase("1002", minutesAfterOrder: 2),
                Sample.purchase("2001", product: "com.example.other"),
            ],
            environment: .sandbox
        )
        let outcome = decider.outcome(for: Sample.job(), result: result, random: 0.5)
        #expect(outcome.kind == .verified)
        #expect(outcome.candidates.map(\.transactionId) == ["1002", "1001"])
        #expect(outcome.environment == .sandbox)
        #expect(outcome.appleStatus == 0)
        #expect(outcome.lease == Lease(jobId: 42, token: Sample.leaseToken))
        #expect(outcome.reason == nil)
        #expect(outcome.error == nil)
        #expect(outcome.retryInSeconds == nil)
        #expect(outcome.maxAttempts == 80)
        #expect(outcome.cancelled.isEmpty)
    }

    @Test("a refunded purchase elsewhere in the receipt travels as cancelled, whatever the decision")
    func cancelledPurchases() {
        let refunded = Sample.purchase("900", product: "com.example.other", cancelledMs: Sample.orderTimeMs)
        let outcome = decider.outcome(
            for: Sample.job(), result: Sample.receipt([Sample.purchase("1001"), refunded]), random: 0
        )
        #expect(outcome.kind == .verified)
        #expect(outcome.candidates.map(\.transactionId) == ["1001"])
        #expect(outcome.cancelled.map(\.transactionId) == ["900"])
    }

    @Test("a bundle mismatch: rejected bundle_mismatch, nothing to credit")
    func bundleMismatch() {
        let outcome = decider.outcome(
            for: Sample.job(), result: Sample.receipt([Sample.purchase("1001")], bundleId: "com.evil.app"), random: 0
        )
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason == .bundleMismatch)
        #expect(outcome.candidates.isEmpty)
        #expect(outcome.error?.isEmpty == false)
        #expect(outcome.retryInSeconds == nil)
    }

    @Test("a rejection by the rules keeps Apple's status and the environment")
    func ruleRejection() {
        let outcome = decider.outcome(
            for: Sample.job(clientTransactionId: "404"), result: Sample.receipt([Sample.purchase("1001")]), random: 0
        )
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason == .transactionNotFound)
        #expect(outcome.appleStatus == 0)
        #expect(outcome.environment == .production)
    }

    @Test("21003: rejected invalid_receipt at the first attempt", arguments: [21003, 21010])
    func invalidReceipt(status: Int) throws {
        let outcome = decider.outcome(for: Sample.job(), result: .invalidReceipt(status: status), random: 0)
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason == .invalidReceipt)
        #expect(outcome.appleStatus == status)
        #expect(try #require(outcome.error).contains("\(status)"))
        #expect(outcome.retryInSeconds == nil)
    }

    @Test("21002 is retried until malformedDataAttempts, then rejected invalid_receipt")
    func malformedData() throws {
        let first = decider.outcome(for: Sample.job(attempt: 1), result: .malformedData(status: 21002), random: 1)
        #expect(first.kind == .retry)
        #expect(first.reason == nil)
        #expect(first.appleStatus == 21002)
        #expect(first.retryInSeconds == 30)

        let second = decider.outcome(for: Sample.job(attempt: 2), result: .malformedData(status: 21002), random: 1)
        #expect(second.kind == .retry)
        #expect(second.retryInSeconds == 60)

        let third = decider.outcome(for: Sample.job(attempt: 3), result: .malformedData(status: 21002), random: 1)
        #expect(Sample.retry.malformedDataAttempts == 3)
        #expect(third.kind == .rejected)
        #expect(third.reason == .invalidReceipt)
        #expect(third.appleStatus == 21002)
        #expect(third.retryInSeconds == nil)
        #expect(try #require(third.error).contains("3 times"))
    }

    @Test("a configuration error: config_error at the base delay, whatever the attempt", arguments: [1, 2, 10, 79])
    func configurationError(attempt: Int) throws {
        let failure = Sample.failure(
            .configuration, message: "Apple answered 21004: check APPLE_SHARED_SECRET", appleStatus: 21004
        )
        for random in [0.0, 0.5, 1.0] {
            let outcome = decider.outcome(
                for: Sample.job(attempt: attempt), result: .configurationError(failure), random: random
            )
            #expect(outcome.kind == .configError)
            #expect(outcome.reason == nil)
            #expect(outcome.appleStatus == 21004)
            #expect(outcome.retryInSeconds == Sample.retry.delay(afterAttempt: 1, random: random))
            #expect(outcome.retryInSeconds == 15 + 15 * random)
            #expect(try #require(outcome.error).contains("APPLE_SHARED_SECRET"))
        }
    }

    @Test("retryable with Retry-After 120: waits at least 120 s")
    func retryAfter() throws {
        let failure = Sample.failure(.httpStatus, httpStatus: 503, retryAfterSeconds: 120)
        for random in [0.0, 1.0] {
            let outcome = decider.outcome(for: Sample.job(attempt: 1), result: .retryable(failure), random: random)
            #expect(outcome.kind == .retry)
            #expect(try #require(outcome.retryInSeconds) >= 120)
            #expect(outcome.appleStatus == nil)
            #expect(try #require(outcome.error).contains("test failure"))
        }
    }

    @Test("retryable: the backoff grows with the attempt",
          arguments: [(1, 30.0), (3, 120), (8, 3600), (80, 3600)] as [(Int, Double)])
    func retryableBackoff(attempt: Int, delay: Double) {
        let failure = Sample.failure(.appleStatus, appleStatus: 21005)
        let outcome = decider.outcome(for: Sample.job(attempt: attempt), result: .retryable(failure), random: 1)
        #expect(outcome.kind == .retry)
        #expect(outcome.retryInSeconds == delay)
        #expect(outcome.appleStatus == 21005)
    }

    @Test("empty purchases: retried at attempt 1, rejected no_purchases at attempt 3")
    func noPurchases() throws {
        let first = decider.outcome(for: Sample.job(attempt: 1), result: Sample.receipt([]), random: 1)
        #expect(first.kind == .retry)
        #expect(first.reason == nil)
        #expect(first.retryInSeconds == 30)
        #expect(first.error?.isEmpty == false)

        let second = decider.outcome(for: Sample.job(attempt: 2), result: Sample.receipt([]), random: 1)
        #expect(second.kind == .retry)
        #expect(second.retryInSeconds == 60)

        let third = decider.outcome(for: Sample.job(attempt: 3), result: Sample.receipt([]), random: 1)
        #expect(third.kind == .rejected)
        #expect(third.reason == .noPurchases)
        #expect(third.retryInSeconds == nil)
    }

    @Test("malformed input: rejected malformed_input without an Apple status")
    func malformedInput() {
        let outcome = decider.malformedInput(Sample.job(), problem: "receipt_data is not base64")
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason == .malformedInput)
        #expect(outcome.error == "receipt_data is not base64")
        #expect(outcome.appleStatus == nil)
    }

    @Test("what the circuit breaker counts as an answer from Apple")
    func appleAnswered() {
        #expect(!AppStoreResult.retryable(Sample.failure(.timeout)).appleAnswered)
        #expect(AppStoreResult.configurationError(Sample.failure(.configuration)).appleAnswered)
        #expect(AppStoreResult.invalidReceipt(status: 21003).appleAnswered)
        #expect(AppStoreResult.malformedData(status: 21002).appleAnswered)
        #expect(Sample.receipt([]).appleAnswered)
    }

    @Test(
        "Apple's real sandbox answer, through the interpreter and the decider: the client's transaction credited",
        .needsAppleFixtures
    )
    func realAnswer() throws {
        let body = try WorkersFixtures.bytes(WorkersFixtures.sandboxResponseName)
        let step = AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: body, endpoint: .sandbox)
        guard case .done(let result) = step else {
            Issue.record("expected a result, got \(step)")
            return
        }
        let decider = OutcomeDecider(
            rules: RulesConfiguration(bundleIds: ["com.revenuecat.sampleapp"]), retry: RetryPolicy()
        )
        var job = Sample.job(clientTransactionId: "1000000692879214", bundleId: "com.revenuecat.sampleapp")
        job.order.productId = "com.revenuecat.monthly_4.99.1_week_intro"
        job.order.orderCreatedAtMs = 1_594_755_400_000 + 10_000  // while that week's period ran
        let outcome = decider.outcome(for: job, result: result, random: 0)
        #expect(outcome.kind == .verified, "\(outcome)")
        #expect(outcome.environment == .sandbox)
        let credited = try #require(outcome.candidates.first)
        #expect(outcome.candidates.count == 1)
        #expect(credited.transactionId == "1000000692879214")
        #expect(credited.originalTransactionId == "1000000692878476")
        #expect(credited.webOrderLineItemId == "1000000054042695")
        #expect(credited.expiresDateMs == 1_594_755_700_000)

        // The same order placed after that period ended: expired.
        job.order.orderCreatedAtMs = 1_594_755_700_000
        let late = decider.outcome(for: job, result: result, random: 0)
        #expect(late.kind == .rejected)
        #expect(late.reason == .expired)
    }
}
