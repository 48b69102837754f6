import AppStoreClient
import AppStoreModel
import ReceiptQueue
import ReceiptRules
import Testing

@testable import Workers

/// What a receipt job asks of the Transaction History, and what it may do with the pages read (issue 38).
@Suite("Transaction History: the query a job asks, and no verdict from part of a history")
struct HistoryReadingTests {
    static func order(transactionId: String? = nil, createdAtMs: Int64? = nil) -> OrderContext {
        OrderContext(
            jobId: 1, orderId: "o", userId: "u", productId: "coins.100", clientTransactionId: transactionId,
            bundleId: "com.example.app", orderCreatedAtMs: createdAtMs, jobCreatedAtMs: 1_700_000_000_000
        )
    }

    static let rules = RulesConfiguration(bundleIds: ["com.example.app"])

    @Test("newest first always; the product and the order's time (less the slack) unless the client named a transaction")
    func queries() {
        let byProduct = HistoryReading(order: Self.order(createdAtMs: 1_700_000_600_000), rules: Self.rules)
        #expect(byProduct.query == TransactionHistoryQuery(
            sort: .descending, productIds: ["coins.100"], startDate: 1_700_000_600_000 - Self.rules.orderTimeSlackMs
        ))
        #expect(byProduct.until == nil)
        #expect(
            HistoryReading(order: Self.order(), rules: Self.rules).query
                == TransactionHistoryQuery(sort: .descending, productIds: ["coins.100"])
        )
        let client = HistoryReading(order: Self.order(transactionId: "42", createdAtMs: 5), rules: Self.rules)
        #expect(client.query == TransactionHistoryQuery(sort: .descending))
        #expect(client.until != nil)
    }

    @Test("a history the cap cut is retried; one the caller stopped, or complete, is decided; empty by product is asked again")
    func next() {
        let cut = TransactionHistory(signedTransactions: ["a"], pages: 50, nextRevision: "r")
        let stopped = TransactionHistory(signedTransactions: ["a"], pages: 3, nextRevision: "r", satisfied: true)
        let complete = TransactionHistory(signedTransactions: ["a"], pages: 3, nextRevision: nil)
        let empty = TransactionHistory(signedTransactions: [], pages: 1, nextRevision: nil)
        let client = HistoryReading(order: Self.order(transactionId: "42"), rules: Self.rules)
        let since = HistoryReading(order: Self.order(createdAtMs: 5), rules: Self.rules)
        let any = HistoryReading(order: Self.order(), rules: Self.rules)

        guard case .retry(let detail) = client.next(after: cut, pageCap: 50) else {
            Issue.record("a cut history must be retried")
            return
        }
        #expect(detail.contains("more than 50 pages before transaction 42 was read"))
        guard case .retry = any.next(after: cut, pageCap: 50) else {
            Issue.record("a cut history must be retried")
            return
        }
        #expect(client.next(after: stopped, pageCap: 50) == .decide)
        #expect(client.next(after: complete, pageCap: 50) == .decide)
        #expect(client.next(after: empty, pageCap: 50) == .decide, "the rules say transaction_not_found")
        #expect(since.next(after: empty, pageCap: 50) == .askWithoutStartDate)
        #expect(any.next(after: empty, pageCap: 50) == .productMissing)
        #expect(since.withoutStartDate == TransactionHistoryQuery(sort: .descending, productIds: ["coins.100"]))
    }
}
