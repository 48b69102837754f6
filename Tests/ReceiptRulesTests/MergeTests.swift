import ReceiptRules
import Testing

@Suite("Merging purchase entries by transaction id")
struct MergeTests {
    let base = Sample.orderTimeMs

    @Test func cancellationOnlyInLatestReceiptInfoWins() throws {
        let inApp = Sample.purchase("1001", product: Sample.subscription, at: base, expires: base + 30 * Sample.minute)
        var latest = inApp
        latest.cancellationDateMs = base + 10 * Sample.minute
        latest.cancellationReason = "1"

        for entries in [[inApp, latest], [latest, inApp]] {
            let merged = VerdictRules.merge(entries)
            let purchase = try #require(merged.first)
            #expect(merged.count == 1)
            #expect(purchase.cancellationDateMs == base + 10 * Sample.minute)
            #expect(purchase.cancellationReason == "1")

            let verdict = decide(
                Sample.receipt(entries),
                Sample.order(product: Sample.subscription, clientTransactionId: "1001")
            )
            #expect(verdict.decision.rejection == .refunded)
            #expect(verdict.cancelledPurchases.map(\.transactionId) == ["1001"])
        }
    }

    @Test func duplicatesCollapse() {
        let entry = Sample.purchase("1001")
        let merged = VerdictRules.merge([entry, entry, entry])
        #expect(merged == [entry])
        #expect(decide(Sample.receipt([entry, entry])).decision.candidateIds == ["1001"])
    }

    @Test func fieldsAreFilledFromTheOtherCopy() {
        let sparse = Sample.purchase("1001", product: Sample.subscription, at: nil)
        let full = Sample.purchase(
            "1001", product: Sample.subscription, at: base, expires: base + 30 * Sample.minute,
            original: "900", webOrderLineItemId: "5001", quantity: 2
        )
        for entries in [[sparse, full], [full, sparse]] {
            #expect(VerdictRules.merge(entries) == [full])
        }
    }

    @Test func laterExpiryIsKept() {
        let early = Sample.purchase("1001", product: Sample.subscription, at: base, expires: base + Sample.minute)
        let late = Sample.purchase("1001", product: Sample.subscription, at: base, expires: base + 2 * Sample.minute)
        #expect(VerdictRules.merge([early, late]).map(\.expiresDateMs) == [base + 2 * Sample.minute])
        #expect(VerdictRules.merge([late, early]).map(\.expiresDateMs) == [base + 2 * Sample.minute])
    }

    @Test func earliestCancellationKeepsItsReason() {
        let first = Sample.purchase("1001", cancelled: base + Sample.minute, reason: "0")
        let second = Sample.purchase("1001", cancelled: base + 2 * Sample.minute, reason: "1")
        let undated = Sample.purchase("1001")
        for entries in permutations([first, second, undated]) {
            let merged = VerdictRules.merge(entries)
            #expect(merged.map(\.cancellationDateMs) == [base + Sample.minute])
            #expect(merged.map(\.cancellationReason) == ["0"])
        }
    }

    @Test func entriesWithoutTransactionOrProductIdAreDropped() {
        let entries = [
            Sample.purchase("", product: Sample.consumable),
            Sample.purchase("1001", product: ""),
            Sample.purchase("1002"),
        ]
        #expect(VerdictRules.merge(entries).map(\.transactionId) == ["1002"])
        // Nothing usable left is the same as an empty receipt.
        #expect(decide(Sample.receipt(Array(entries.prefix(2)))).decision.isRetry)
    }

    @Test func outputIsNewestFirstThenByTransactionIdDescending() {
        let entries = [
            Sample.purchase("998", at: base),
            Sample.purchase("1000", at: base),
            Sample.purchase("999", at: base),
            Sample.purchase("5", at: base + 1),
            Sample.purchase("7", at: nil),
            Sample.purchase("6", at: nil),
            Sample.purchase("4", at: base - 1),
        ]
        #expect(VerdictRules.merge(entries).map(\.transactionId) == ["5", "1000", "999", "998", "4", "7", "6"])
    }

    /// In-app and latest_receipt_info copies that disagree on every field they share, with duplicates: each ordering
    /// of the entries yields the same merged purchases and the same verdict.
    @Test func everyInputOrderGivesTheSameResult() {
        let entries = [
            Sample.purchase("1001", product: Sample.subscription, at: base + 2 * Sample.minute,
                            expires: base + 20 * Sample.minute, webOrderLineItemId: "5001"),
            Sample.purchase("1001", product: Sample.subscription, at: base + 3 * Sample.minute,
                            expires: base + 25 * Sample.minute, original: "900", webOrderLineItemId: "5000"),
            Sample.purchase("1002", product: Sample.subscription, at: base + 2 * Sample.minute,
                            expires: base + 30 * Sample.minute, cancelled: base + 4 * Sample.minute, reason: "0"),
            Sample.purchase("1002", product: Sample.subscription, at: base + 2 * Sample.minute,
                            expires: base + 30 * Sample.minute, quantity: 1),
            Sample.purchase("1003", product: Sample.subscription, at: base + Sample.minute,
                            expires: base + 40 * Sample.minute),
            Sample.purchase("1001", product: Sample.subscription, at: nil, quantity: 1),
        ]
        let order = Sample.order(product: Sample.subscription)
        let expectedMerge = VerdictRules.merge(entries)
        let expectedVerdict = decide(Sample.receipt(entries), order)

        #expect(expectedMerge.map(\.transactionId) == ["1002", "1001", "1003"])
        #expect(expectedMerge[1].purchaseDateMs == base + 2 * Sample.minute)
        #expect(expectedMerge[1].expiresDateMs == base + 25 * Sample.minute)
        #expect(expectedMerge[1].originalTransactionId == "900")
        #expect(expectedMerge[1].webOrderLineItemId == "5000")
        #expect(expectedVerdict.decision.candidateIds == ["1001", "1003"])
        #expect(expectedVerdict.cancelledPurchases.map(\.transactionId) == ["1002"])

        let orderings = permutations(entries)
        #expect(orderings.count == 720)
        for ordering in orderings {
            #expect(VerdictRules.merge(ordering) == expectedMerge)
            #expect(decide(Sample.receipt(ordering), order) == expectedVerdict)
        }
    }
}
