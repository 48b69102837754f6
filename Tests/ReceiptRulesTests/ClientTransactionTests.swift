import ReceiptRules
import Testing

@Suite("With a client transaction id")
struct ClientTransactionTests {
    let base = Sample.orderTimeMs

    @Test func creditsExactlyThatTransaction() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", at: base + Sample.minute),
            Sample.purchase("1002", at: base + 2 * Sample.minute),
        ])
        let verdict = decide(receipt, Sample.order(clientTransactionId: "1001"))
        #expect(verdict.decision.candidateIds == ["1001"])
    }

    @Test func missingTransactionIsNotReplacedByAnotherOfTheProduct() throws {
        let receipt = Sample.receipt([Sample.purchase("1001")])
        let verdict = decide(receipt, Sample.order(clientTransactionId: "1009"))
        #expect(verdict.decision.rejection == .transactionNotFound)
        #expect(try #require(verdict.decision.detail).contains("1009"))
    }

    @Test func transactionOfAnotherProduct() throws {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.consumable),
            Sample.purchase("1002", product: "com.example.coins"),
        ])
        let verdict = decide(receipt, Sample.order(product: Sample.consumable, clientTransactionId: "1002"))
        #expect(verdict.decision.rejection == .productMismatch)
        let detail = try #require(verdict.decision.detail)
        #expect(detail.contains("1002") && detail.contains("com.example.coins") && detail.contains(Sample.consumable))
    }

    @Test func refundedTransaction() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", cancelled: base + 2 * Sample.minute, reason: "1"),
            Sample.purchase("1002"),
        ])
        let verdict = decide(receipt, Sample.order(clientTransactionId: "1001"))
        #expect(verdict.decision.rejection == .refunded)
        #expect(verdict.cancelledPurchases.map(\.transactionId) == ["1001"])
    }

    @Test(arguments: [
        (expiresOffset: Int64(-1), expired: true),
        (expiresOffset: 0, expired: true),
        (expiresOffset: 1, expired: false),
    ])
    func expiryAtTheOrderTime(expiresOffset: Int64, expired: Bool) {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - Sample.minute,
                            expires: base + expiresOffset),
        ])
        let verdict = decide(receipt, Sample.order(product: Sample.subscription, clientTransactionId: "1001"))
        if expired {
            #expect(verdict.decision.rejection == .expired)
        } else {
            #expect(verdict.decision.candidateIds == ["1001"])
        }
    }

    /// Without an order time from the API layer, the job's creation time stands in; the verification time never does.
    @Test func expiryAgainstTheJobTimeWhenTheOrderTimeIsMissing() {
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - Sample.minute, expires: base + 30_000),
        ])
        let early = Sample.order(product: Sample.subscription, clientTransactionId: "1001", createdAtMs: nil,
                                 jobCreatedAtMs: base + 29_999)
        let late = Sample.order(product: Sample.subscription, clientTransactionId: "1001", createdAtMs: nil,
                                jobCreatedAtMs: base + 30_000)
        #expect(decide(receipt, early).decision.candidateIds == ["1001"])
        #expect(decide(receipt, late).decision.rejection == .expired)
    }

    @Test func purchaseWithoutExpiryNeverExpires() {
        let receipt = Sample.receipt([Sample.purchase("1001", at: base - 400 * 24 * 60 * Sample.minute)])
        #expect(decide(receipt, Sample.order(clientTransactionId: "1001")).decision.candidateIds == ["1001"])
    }

    /// The order-time slack only chooses among candidates when the client named none; a named transaction is checked
    /// by id, and the ledger keeps it from paying twice.
    @Test func namedTransactionIsNotSubjectToTheSlack() {
        let receipt = Sample.receipt([Sample.purchase("1001", at: base - Sample.fiveMinutes - 1)])
        #expect(decide(receipt, Sample.order(clientTransactionId: "1001")).decision.candidateIds == ["1001"])
        #expect(decide(receipt, Sample.order()).decision.rejection == .transactionNotFound)
    }

    @Test func emptyClientTransactionIdCountsAsNone() {
        let receipt = Sample.receipt([Sample.purchase("1001"), Sample.purchase("1002", at: base + 2 * Sample.minute)])
        #expect(decide(receipt, Sample.order(clientTransactionId: "")).decision.candidateIds == ["1002", "1001"])
    }

    @Test func checksComeInOrderNotFoundProductRefundExpiry() {
        // Another product, refunded and expired: the product is what is reported.
        let receipt = Sample.receipt([
            Sample.purchase("1001", product: "com.example.coins", at: base - Sample.minute, expires: base,
                            cancelled: base - 1),
        ])
        let verdict = decide(receipt, Sample.order(product: Sample.subscription, clientTransactionId: "1001"))
        #expect(verdict.decision.rejection == .productMismatch)
        // Same product, refunded and expired: refunded.
        let ownProduct = Sample.receipt([
            Sample.purchase("1001", product: Sample.subscription, at: base - Sample.minute, expires: base,
                            cancelled: base - 1),
        ])
        let refunded = decide(ownProduct, Sample.order(product: Sample.subscription, clientTransactionId: "1001"))
        #expect(refunded.decision.rejection == .refunded)
    }
}
