import ReceiptRules
import Testing

@Suite("Without a client transaction id")
struct CandidateTests {
    let base = Sample.orderTimeMs

    @Test func candidatesAreNewestFirst() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", at: base + Sample.minute),
            Sample.purchase("1003", at: base + 3 * Sample.minute),
            Sample.purchase("1002", at: base + 2 * Sample.minute),
            Sample.purchase("2001", product: "com.example.coins", at: base + 4 * Sample.minute),
            Sample.purchase("1005", at: base + 2 * Sample.minute),
        ])
        #expect(decide(receipt).decision.candidateIds == ["1003", "1005", "1002", "1001"])
    }

    @Test func productMismatchNamesAFewOfTheReceiptsProducts() throws {
        let products = (1...5).map { "com.example.p\($0)" }
        let receipt = Sample.receipt(products.enumerated().map { index, product in
            Sample.purchase("\(1000 + index)", product: product, at: base + Int64(index) * Sample.minute)
        })
        let verdict = decide(receipt, Sample.order(product: Sample.consumable))
        #expect(verdict.decision.rejection == .productMismatch)
        let detail = try #require(verdict.decision.detail)
        #expect(detail.contains(Sample.consumable))
        #expect(detail.contains("com.example.p5, com.example.p4, com.example.p3 and 2 more"))
        #expect(!detail.contains("com.example.p1"))
    }

    @Test(arguments: [
        (purchaseOffset: -Sample.fiveMinutes - 1, candidate: false),
        (purchaseOffset: -Sample.fiveMinutes, candidate: true),
        (purchaseOffset: -Sample.fiveMinutes + 1, candidate: true),
        (purchaseOffset: Int64(0), candidate: true),
    ])
    func slackBoundary(purchaseOffset: Int64, candidate: Bool) {
        let receipt = Sample.receipt([Sample.purchase("1001", at: base + purchaseOffset)])
        let decision = decide(receipt).decision
        if candidate {
            #expect(decision.candidateIds == ["1001"])
        } else {
            #expect(decision.rejection == .transactionNotFound)
        }
    }

    @Test func olderPurchasesOfTheProductAreNotCandidates() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", at: base - 24 * 60 * Sample.minute),
            Sample.purchase("1002", at: base + Sample.minute),
        ])
        #expect(decide(receipt).decision.candidateIds == ["1002"])
    }

    @Test func slackIsConfigurable() {
        let receipt = Sample.receipt([Sample.purchase("1001", at: base - Sample.minute - 1)])
        var configuration = Sample.configuration()
        configuration.orderTimeSlackMs = Sample.minute
        #expect(decide(receipt, Sample.order(), configuration).decision.rejection == .transactionNotFound)
        configuration.orderTimeSlackMs = Sample.minute + 1
        #expect(decide(receipt, Sample.order(), configuration).decision.candidateIds == ["1001"])
    }

    @Test func purchaseWithoutADateStaysACandidateAfterDatedOnes() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", at: nil),
            Sample.purchase("1002", at: base),
            Sample.purchase("1000", at: base - 60 * Sample.minute),
        ])
        #expect(decide(receipt).decision.candidateIds == ["1002", "1001"])
    }

    /// The slack filter needs the order's own time; the job's creation time only judges expiry.
    @Test func withoutOrderTimeEveryPurchaseOfTheProductIsACandidate() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", at: base - 24 * 60 * Sample.minute),
            Sample.purchase("1002", at: base + Sample.minute),
        ])
        let order = Sample.order(createdAtMs: nil, jobCreatedAtMs: base + 2 * Sample.minute)
        #expect(decide(receipt, order).decision.candidateIds == ["1002", "1001"])
    }

    @Test func refundedOnlyWhenEveryRecentPurchaseIsRefunded() throws {
        let refunded = Sample.purchase("1002", at: base + 2 * Sample.minute, cancelled: base + 3 * Sample.minute,
                                       reason: "0")
        let allRefunded = decide(Sample.receipt([refunded]))
        #expect(allRefunded.decision.rejection == .refunded)
        let detail = try #require(allRefunded.decision.detail)
        #expect(detail.contains("1002") && detail.contains("reason 0"))

        let oneLeft = decide(Sample.receipt([refunded, Sample.purchase("1001", at: base + Sample.minute)]))
        #expect(oneLeft.decision.candidateIds == ["1001"])
    }

    /// Refunds older than the order window are still reported for revocation, but do not make the order `refunded`.
    @Test func oldRefundDoesNotHideTheWindowCheck() {
        let oldRefund = Sample.purchase("1001", at: base - 60 * Sample.minute, cancelled: base - 50 * Sample.minute)
        let verdict = decide(Sample.receipt([oldRefund]))
        #expect(verdict.decision.rejection == .transactionNotFound)
        #expect(verdict.cancelledPurchases.map(\.transactionId) == ["1001"])
    }

    @Test(arguments: [
        (expiresOffset: Int64(0), expired: true),
        (expiresOffset: 1, expired: false),
    ])
    func expiryBoundary(expiresOffset: Int64, expired: Bool) {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - Sample.minute,
                            expires: base + expiresOffset),
        ])
        let decision = decide(receipt, Sample.order(product: Sample.subscription)).decision
        if expired {
            #expect(decision.rejection == .expired)
        } else {
            #expect(decision.candidateIds == ["1001"])
        }
    }

    @Test func expiredPeriodsAreDroppedActiveOnesKept() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - 4 * Sample.minute, expires: base - 1),
            Sample.purchase("1002", product: Sample.subscription, at: base - 1, expires: base + 30 * Sample.minute),
        ])
        #expect(decide(receipt, Sample.order(product: Sample.subscription)).decision.candidateIds == ["1002"])
    }

    @Test func refundsAreSetAsideBeforeExpiryIsJudged() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - Sample.minute, expires: base - 1),
            Sample.purchase("1002", product: Sample.subscription, at: base - Sample.minute, expires: base + 60_000,
                            cancelled: base + 1),
        ])
        // 1002 is refunded, 1001 (not refunded) expired: the verdict reports what is left after refunds.
        #expect(decide(receipt, Sample.order(product: Sample.subscription)).decision.rejection == .expired)
        let onlyRefunded = Sample.receipt([receipt.entries[1]])
        #expect(decide(onlyRefunded, Sample.order(product: Sample.subscription)).decision.rejection == .refunded)
    }

    @Test func cancelledPurchasesAreReportedWhenAnotherIsCredited() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - 30 * Sample.minute,
                            expires: base + 30 * Sample.minute, cancelled: base - 10 * Sample.minute, reason: "1"),
            Sample.purchase("1002", at: base + Sample.minute),
            Sample.purchase("1003", at: base - 60 * Sample.minute, cancelled: base - 55 * Sample.minute),
        ])
        let verdict = decide(receipt)
        #expect(verdict.decision.candidateIds == ["1002"])
        #expect(verdict.cancelledPurchases.map(\.transactionId) == ["1001", "1003"])
        #expect(verdict.cancelledPurchases.first?.cancellationReason == "1")
    }

    @Test(arguments: [
        (attempt: 1, limit: 3, retry: true),
        (attempt: 2, limit: 3, retry: true),
        (attempt: 3, limit: 3, retry: false),
        (attempt: 4, limit: 3, retry: false),
        (attempt: 1, limit: 1, retry: false),
    ])
    func emptyReceiptRetriesThenRejects(attempt: Int, limit: Int, retry: Bool) throws {
        let verdict = decide(
            Sample.receipt([]),
            Sample.order(attempt: attempt),
            Sample.configuration(noPurchasesAttempts: limit)
        )
        if retry {
            #expect(verdict.decision.isRetry)
        } else {
            #expect(verdict.decision.rejection == .noPurchases)
        }
        #expect(try #require(verdict.decision.detail).contains("attempt \(attempt)"))
        #expect(verdict.cancelledPurchases.isEmpty)
    }
}
