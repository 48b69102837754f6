import Foundation
import ReceiptRules

extension JobStore {
    /// What became of one purchase offered by `creditSeen`: credited (the ledger row and the order credited), or why not.
    public struct SeenCredit: Sendable, Hashable {
        public var transactionId: String
        public var ledgerId: Int64?
        public var jobId: Int64?
        public var note: String
    }

    /// Issue 37: offers the purchases a verified answer showed beside job `jobId`'s own (`JobOutcome.seen`) to
    /// `receipt_seen_credit()`, in a transaction of its own after the verdict's: each that nothing credited, whose
    /// token a customer registered before the purchase was made, is credited to that customer exactly once (to an
    /// open order of theirs, else to an order of its own). Returns a row for each purchase the ledger lacked (what
    /// `receipt_announced_credit()` made of it); one already credited costs one index probe and returns nothing.
    public func creditSeen(
        jobId: Int64, environment: PurchaseEnvironment, bundleId: String, source: String, purchases: [Purchase],
        sandboxUsers: [String]?
    ) throws -> [SeenCredit] {
        guard !purchases.isEmpty else { return [] }
        let rulesJSON = try sandboxUsers.map { users in
            String(decoding: try JSONEncoder().encode(NotificationOutcome.CreditRules(sandboxUsers: users)), as: UTF8.self)
        }
        let rows = try connection.query(
            "SELECT * FROM receipt_seen_credit($1::bigint, $2, $3, $4, $5::jsonb, $6::jsonb)",
            [String(jobId), environment.rawValue, bundleId, source, JobOutcome.seenJSONArray(purchases), rulesJSON]
        )
        return rows.rows.indices.map { index in
            SeenCredit(
                transactionId: rows[index, "transaction_id"] ?? "",
                ledgerId: rows.int64(index, "ledger_id"),
                jobId: rows.int64(index, "job_id"),
                note: rows[index, "note"] ?? ""
            )
        }
    }
}
