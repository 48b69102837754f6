import Foundation
import ReceiptQueue
import ReceiptRules
import Testing
import Workers

/// `JobOutcome` is one element of `receipt_complete(p_results jsonb)` (sql/functions/receipt_complete.sql): these are the keys the
/// SQL reads, with the spellings it compares against.
@Suite("JobOutcome encoding")
struct JobOutcomeEncodingTests {
    /// Every top-level key receipt_complete() and receipt_credit() read.
    static let sqlKeys: Set<String> = [
        "id", "lease_token", "outcome", "reason", "error", "apple_status", "environment", "result", "candidates",
        "cancelled", "retry_in_seconds", "max_attempts",
    ]

    private func encoded(_ outcome: JobOutcome) throws -> [String: Any] {
        let data = try JSONEncoder().encode(outcome)
        let object = try JSONSerialization.jsonObject(with: data)
        return try #require(object as? [String: Any], "not a JSON object: \(String(decoding: data, as: UTF8.self))")
    }

    private func int64(_ value: Any?) -> Int64? { (value as? NSNumber)?.int64Value }

    static let subscription = Purchase(
        transactionId: "1000000692879214", originalTransactionId: "1000000692878476",
        webOrderLineItemId: "1000000054042695", productId: "com.example.monthly", quantity: 1,
        purchaseDateMs: 1_594_755_400_000, expiresDateMs: 1_594_755_700_000
    )
    static let refunded = Purchase(
        transactionId: "900", productId: "com.example.gems", quantity: 3, purchaseDateMs: 1_594_000_000_000,
        cancellationDateMs: 1_594_100_000_000, cancellationReason: "1"
    )

    @Test("verified: identity, outcome, Apple's status, environment, candidates with Apple's field names, result")
    func verified() throws {
        let outcome = Sample.decider.outcome(
            for: Sample.job(),
            result: Sample.receipt(
                [Sample.purchase("1001", minutesAfterOrder: 1), Sample.purchase("1002", minutesAfterOrder: 2)],
                environment: .sandbox
            ),
            random: 0
        )
        let json = try encoded(outcome)
        #expect(Set(json.keys).isSubset(of: Self.sqlKeys), "\(json.keys.sorted())")
        #expect(int64(json["id"]) == 42)
        #expect(json["lease_token"] as? String == Sample.leaseToken)
        #expect(json["outcome"] as? String == "verified")
        #expect(int64(json["apple_status"]) == 0)
        #expect(json["environment"] as? String == "Sandbox")
        #expect(json["max_attempts"] == nil, "only a retry can run out of attempts")
        #expect(json["reason"] == nil)
        #expect(json["retry_in_seconds"] == nil)

        let candidates = try #require(json["candidates"] as? [[String: Any]])
        #expect(candidates.map { $0["transaction_id"] as? String } == ["1002", "1001"])
        let first = try #require(candidates.first)
        #expect(first["original_transaction_id"] as? String == "1002")
        #expect(first["product_id"] as? String == Sample.product)
        #expect(int64(first["quantity"]) == 1)
        #expect(int64(first["purchase_date_ms"]) == Sample.orderTimeMs + 2 * Sample.minute)
        #expect(first["expires_date_ms"] == nil)
        #expect(json["cancelled"] == nil, "empty lists are left out")

        let result = try #require(json["result"] as? [String: Any], "a verified outcome carries result")
        #expect(result["environment"] as? String == "Sandbox")
        #expect(int64(result["apple_status"]) == 0)
        // receipt_complete() adds the purchase it credits (candidates[0], or the one receipt_credit() credits).
        #expect(result["credited"] == nil)
    }

    @Test("a purchase record: every field the ledger stores, dates as integers")
    func purchaseRecord() throws {
        let outcome = JobOutcome(
            lease: Lease(jobId: 7, token: Sample.leaseToken), kind: .verified, appleStatus: 0,
            environment: .production, candidates: [Self.subscription], cancelled: [Self.refunded], maxAttempts: 10
        )
        let json = try encoded(outcome)
        #expect(json["environment"] as? String == "Production")
        let candidate = try #require((json["candidates"] as? [[String: Any]])?.first)
        #expect(Set(candidate.keys) == [
            "transaction_id", "original_transaction_id", "web_order_line_item_id", "product_id", "quantity",
            "purchase_date_ms", "expires_date_ms",
        ])
        #expect(candidate["transaction_id"] as? String == "1000000692879214")
        #expect(candidate["original_transaction_id"] as? String == "1000000692878476")
        #expect(candidate["web_order_line_item_id"] as? String == "1000000054042695")
        #expect(candidate["product_id"] as? String == "com.example.monthly")
        #expect(int64(candidate["quantity"]) == 1)
        #expect(int64(candidate["purchase_date_ms"]) == 1_594_755_400_000)
        #expect(int64(candidate["expires_date_ms"]) == 1_594_755_700_000)

        let cancelled = try #require((json["cancelled"] as? [[String: Any]])?.first)
        #expect(cancelled["transaction_id"] as? String == "900")
        #expect(cancelled["original_transaction_id"] as? String == "900")
        #expect(int64(cancelled["quantity"]) == 3)
        #expect(int64(cancelled["cancellation_date_ms"]) == 1_594_100_000_000)
        #expect(cancelled["cancellation_reason"] as? String == "1")
        #expect(json["max_attempts"] == nil)
    }

    @Test("rejected: reason and error, and a result with the reason and detail")
    func rejected() throws {
        let outcome = Sample.decider.outcome(
            for: Sample.job(), result: Sample.receipt([Sample.purchase("1")], bundleId: "com.evil.app"), random: 0
        )
        let json = try encoded(outcome)
        #expect(Set(json.keys).isSubset(of: Self.sqlKeys))
        #expect(json["outcome"] as? String == "rejected")
        #expect(json["reason"] as? String == "bundle_mismatch")
        let error = try #require(json["error"] as? String)
        #expect(!error.isEmpty)
        #expect(json["candidates"] == nil)
        let result = try #require(json["result"] as? [String: Any], "a rejected outcome carries result")
        #expect(result["reason"] as? String == "bundle_mismatch")
        #expect(result["detail"] as? String == error)
        #expect(result["credited"] == nil)
    }

    @Test("rejected by Apple: invalid_receipt with apple_status")
    func rejectedByApple() throws {
        let outcome = Sample.decider.outcome(for: Sample.job(), result: .invalidReceipt(status: 21003), random: 0)
        let json = try encoded(outcome)
        #expect(json["outcome"] as? String == "rejected")
        #expect(json["reason"] as? String == "invalid_receipt")
        #expect(int64(json["apple_status"]) == 21003)
        #expect(json["environment"] == nil)
        #expect(json["result"] is [String: Any])
    }

    @Test("retry: retry_in_seconds and the error, no reason and no result")
    func retry() throws {
        let failure = Sample.failure(.httpStatus, message: "HTTP 503", httpStatus: 503, retryAfterSeconds: 120)
        let json = try encoded(Sample.decider.outcome(for: Sample.job(), result: .retryable(failure), random: 0))
        #expect(Set(json.keys).isSubset(of: Self.sqlKeys))
        #expect(json["outcome"] as? String == "retry")
        #expect((json["retry_in_seconds"] as? NSNumber)?.doubleValue == 120)
        #expect((json["error"] as? String)?.contains("HTTP 503") == true)
        #expect(json["reason"] == nil)
        #expect(json["result"] == nil, "only verdicts carry result")
        #expect(int64(json["max_attempts"]) == 80)
    }

    @Test("config_error: spelled as the SQL compares it, no result")
    func configError() throws {
        let failure = Sample.failure(.configuration, message: "check APPLE_SHARED_SECRET", appleStatus: 21004)
        let json = try encoded(
            Sample.decider.outcome(for: Sample.job(attempt: 5), result: .configurationError(failure), random: 1)
        )
        #expect(json["outcome"] as? String == "config_error")
        #expect(int64(json["apple_status"]) == 21004)
        #expect((json["retry_in_seconds"] as? NSNumber)?.doubleValue == 30)
        #expect(json["result"] == nil)
        #expect(json["reason"] == nil)
    }

    @Test("every kind encodes to one of the four outcomes receipt_complete() knows")
    func kinds() throws {
        for (kind, text) in [
            (JobOutcome.Kind.verified, "verified"), (.rejected, "rejected"), (.retry, "retry"),
            (.configError, "config_error"),
        ] {
            let outcome = JobOutcome(lease: Lease(jobId: 1, token: Sample.leaseToken), kind: kind, maxAttempts: 1)
            let json = try encoded(outcome)
            #expect(json["outcome"] as? String == text)
            #expect((json["result"] != nil) == (kind == .verified || kind == .rejected), "\(kind)")
        }
    }
}
