import AppStoreClient
import ConsoleOutput
import Foundation
import Workers

/// What `refunds --transaction-id` found (and applied), for the terminal or as JSON.
struct LookupReport: Encodable {
    var transactionId: String
    var bundleId: String
    var environment: String
    var pages: Int
    /// The last page's revision: kept, it asks Apple later for newer refunds only.
    var revision: String?
    var applied: Bool
    var refunds: [Row]
    var unverified: [String]

    struct Row: Encodable {
        var transactionId: String?
        var originalTransactionId: String?
        var productId: String?
        var type: String?
        var purchaseDateMs: Int64?
        var revocationDateMs: Int64?
        var revocationReason: Int?
        var revocationType: String?
        var revocationPercentage: Int?
        /// Why it is not ours to apply; nil when it is.
        var foreign: String?
        /// applied, known, not_credited, not_ours (with --apply), else nil.
        var outcome: String?
    }

    init(transactionId: String, bundleId: String, lookup: RefundRecovery.Lookup, applied: Bool) {
        self.transactionId = transactionId
        self.bundleId = bundleId
        environment = lookup.environment.environment.rawValue
        pages = lookup.pages
        revision = lookup.revision
        self.applied = applied
        unverified = lookup.unverified
        refunds = lookup.refunds.map { refund in
            let t = refund.transaction
            return Row(
                transactionId: t.transactionId, originalTransactionId: t.originalTransactionId, productId: t.productId,
                type: t.type, purchaseDateMs: t.purchaseDateMs, revocationDateMs: t.revocationDateMs,
                revocationReason: t.revocationReason, revocationType: t.revocationType,
                revocationPercentage: t.revocationPercentage, foreign: refund.foreign, outcome: refund.outcome
            )
        }
    }

    var text: String {
        var lines = [
            "refunds of the customer of \(transactionId), \(bundleId), \(environment): \(refunds.count) refunded "
                + "transactions (\(pages) pages)"
        ]
        if !refunds.isEmpty {
            lines.append(
                TextTable(
                    ["transaction", "original", "product", "purchased (UTC)", "refunded (UTC)", "type", "applied"],
                    refunds.map { row in
                        [
                            row.transactionId ?? "-", row.originalTransactionId ?? "-", row.productId ?? "-",
                            LookupOrderCommand.date(row.purchaseDateMs), LookupOrderCommand.date(row.revocationDateMs),
                            row.revocationType ?? "-",
                            row.foreign.map { "foreign: \($0)" } ?? row.outcome ?? (applied ? "-" : "not asked"),
                        ]
                    }
                ).render()
            )
        }
        for problem in unverified { lines.append("(not verified: \(problem))") }
        if applied {
            let applied = refunds.filter { $0.outcome == "applied" }.count
            let known = refunds.filter { $0.outcome == "known" }.count
            lines.append("applied \(applied), already known \(known), not applied \(refunds.count - applied - known)")
        }
        return lines.joined(separator: "\n")
    }
}

/// What `refunds --all-credited-since` did.
struct SweepReport: Encodable {
    var asked: Int
    var refunds: Int
    var applied: Int
    var known: Int
    var skipped: Int
    var failed: Int

    init(_ sweep: RefundRecovery.Sweep) {
        asked = sweep.asked
        refunds = sweep.refunds
        applied = sweep.applied
        known = sweep.known
        skipped = sweep.skipped
        failed = sweep.failed
    }

    var text: String {
        "asked \(asked), refunds \(refunds), applied \(applied), known \(known), skipped \(skipped), failed \(failed)"
    }
}
