import AppStoreClient
import AppStoreModel
import AppStoreSignedData
import ReceiptQueue
import ReceiptRules

/// What a receipt job read through the App Store Server API asks of the customer's Transaction History, and what
/// the pages read allow. Apple's v2 history lists every transaction, finished consumables too, so for a heavy buyer
/// it runs to thousands: the job asks for the part its verdict depends on, newest first, and never decides from a
/// part cut short by the page cap.
///
/// - With a client `transaction_id`: everything, newest first, until the page holding that transaction (the rules
///   look at it alone; its product is not filtered on, so one of another product is still `product_mismatch`).
/// - Without: the order's product only, purchased since `order_created_at` minus the slack when given, newest first,
///   every page (the ledger credits the newest candidate not yet credited, so every candidate counts).
///
/// Pure: no I/O.
struct HistoryReading: Sendable {
    /// The filters and order asked for.
    var query: TransactionHistoryQuery
    /// The transaction whose page ends the reading, when the client reported one.
    var clientTransactionId: String?

    init(order: OrderContext, rules: RulesConfiguration) {
        if let transactionId = order.clientTransactionId, !transactionId.isEmpty {
            query = TransactionHistoryQuery(sort: .descending)
            clientTransactionId = transactionId
        } else {
            query = TransactionHistoryQuery(
                sort: .descending, productIds: [order.productId],
                startDate: order.orderCreatedAtMs.map { $0 - rules.orderTimeSlackMs }
            )
        }
    }

    /// Ends the reading after the page that holds the client's transaction (read unverified: only to stop).
    var until: (@Sendable ([String]) -> Bool)? {
        guard let clientTransactionId else { return nil }
        return { page in page.contains { SignedTransaction.unverifiedTransactionId($0) == clientTransactionId } }
    }

    /// What to do with a history read.
    enum Next: Equatable {
        /// The rules decide on the transactions read.
        case decide
        /// The page cap cut the reading before what the job needs: no verdict, a retry that reads again from the
        /// newest end.
        case retry(detail: String)
        /// Apple has no purchase of the order's product: `product_mismatch`, as the rules say of a receipt without one.
        case productMissing
        /// Nothing of the order's product since the order: one newest-first page of the product without the date
        /// tells `transaction_not_found` (bought before the order) from `product_mismatch` (never bought).
        case askWithoutStartDate
    }

    func next(after history: TransactionHistory, pageCap: Int) -> Next {
        if history.isTruncated {
            let wanted = clientTransactionId.map { "transaction \($0)" } ?? "every purchase of the order's product"
            return .retry(
                detail: "the customer's Transaction History has more than \(pageCap) pages before \(wanted) was read: "
                    + "no verdict from part of it; the next attempt reads it again from the newest"
            )
        }
        guard clientTransactionId == nil, history.signedTransactions.isEmpty else { return .decide }
        return query.startDate == nil ? .productMissing : .askWithoutStartDate
    }

    /// The follow-up of `.askWithoutStartDate`: the product's newest page, whatever its date.
    var withoutStartDate: TransactionHistoryQuery {
        var query = query
        query.startDate = nil
        return query
    }
}
