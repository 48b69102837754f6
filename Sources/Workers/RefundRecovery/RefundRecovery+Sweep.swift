import AppStoreClient
import Foundation
import PostgresClient

extension RefundRecovery {
    /// A purchase chain credited here, to ask Get Refund History about (`receipt_refund_candidates()`).
    public struct Candidate: Sendable, Hashable {
        public var environment: String
        public var bundleId: String
        public var originalTransactionId: String
        public var transactionId: String
    }

    /// What a sweep did.
    public struct Sweep: Sendable, Hashable {
        /// Purchase chains asked about (one Get Refund History lookup each, every page read).
        public var asked = 0
        /// Refunded transactions Apple listed and that verified.
        public var refunds = 0
        /// Refunds the ledger lacked, applied now.
        public var applied = 0
        /// Refunds the ledger had already.
        public var known = 0
        /// Refunds not applied: another app or environment, not credited here (prorated), not verified, or all of them
        /// without `apply`.
        public var skipped = 0
        /// Chains whose refunds could not be read (logged with why); the sweep goes on.
        public var failed = 0

        public init() {}
    }

    /// The chains credited since `since`, at most `limit` (`receipt_refund_candidates()`).
    public func candidates(since: Date, limit: Int, _ connection: PostgresConnection) throws -> [Candidate] {
        let rows = try connection.query(
            "SELECT environment, bundle_id, original_transaction_id, transaction_id "
                + "FROM receipt_refund_candidates(to_timestamp($1::double precision), $2)",
            [String(since.timeIntervalSince1970), String(limit)]
        )
        return rows.rows.indices.compactMap { row in
            guard let environment = rows[row, "environment"], let bundleId = rows[row, "bundle_id"],
                let original = rows[row, "original_transaction_id"], let transactionId = rows[row, "transaction_id"]
            else { return nil }
            return Candidate(
                environment: environment, bundleId: bundleId, originalTransactionId: original,
                transactionId: transactionId
            )
        }
    }

    /// Every chain credited since `since` (at most `limit`), one lookup each, in its own environment, paced by the
    /// client under Apple's Get Refund History limit; with `apply`, the refunds the ledger lacks applied. A customer's
    /// history is
    /// read once per sweep even when several of their chains were credited: a chain whose transaction an earlier answer
    /// listed is not asked about again.
    public func sweep(since: Date, limit: Int, apply: Bool, _ connection: PostgresConnection) throws -> Sweep {
        var sweep = Sweep()
        var seen: Set<String> = []
        for candidate in try candidates(since: since, limit: limit, connection)
        where !seen.contains(candidate.environment + "/" + candidate.originalTransactionId) {
            let environment: AppStoreEndpoint = candidate.environment == "Production" ? .production : .sandbox
            sweep.asked += 1
            let found = lookUp(
                transactionId: candidate.transactionId, bundleId: candidate.bundleId, environment: environment
            )
            switch found {
            case .failure(let error):
                sweep.failed += 1
                logger.error(
                    "refunds not read",
                    metadata: [
                        "original_transaction_id": "\(candidate.originalTransactionId)",
                        "environment": "\(candidate.environment)", "error": "\(error)",
                    ]
                )
            case .success(var lookup):
                if apply { try self.apply(&lookup, connection) }
                for refund in lookup.refunds {
                    if let original = refund.transaction.originalTransactionId {
                        seen.insert(candidate.environment + "/" + original)
                    }
                    switch refund.outcome {
                    case "applied"?: sweep.applied += 1
                    case "known"?: sweep.known += 1
                    default: sweep.skipped += 1
                    }
                }
                sweep.refunds += lookup.refunds.count
                sweep.skipped += lookup.unverified.count
            }
        }
        return sweep
    }
}
