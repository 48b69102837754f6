import AppStoreModel
import FakeAppStore
import Foundation
import Testing

extension BadInput {
    /// What the fake App Store can answer badly, end to end (RetryTests covers 21005, HTML 503, a truncated body and
    /// a hang followed by success): resets, Apple's retryable internal errors, a reset that never stops, and an
    /// enormous purchase history.
    @Suite("Bad input: Apple's answers, end to end", .ownThread)
    struct AppleAnswerTests {
        @Test("a reset, 21199 and 21100 (is_retryable), an HTTP 503 and 21009, then success: verified on the sixth attempt")
        func transientFaultsThenSuccess() async throws {
            let h = try Harness()
            let id = try h.enqueue(
                Harness.receipt(
                    purchases: [Harness.purchase("ans-1")], faults: [.reset, .status21199, .status21100, .http503, .status21009]
                ),
                order: "faults"
            )
            try h.drain { $0.retry.maxAttempts = 8 }
            let job = try h.job(id)
            #expect(job["state"] == "verified", "\(job)")
            #expect(job["attempts"] == "6")
            #expect(job["apple_status"] == "0")
            #expect(h.fake.stats().count("production", "reset") == 1)
            #expect(h.fake.stats().total == 6)
            try Invariants.check(h.db, enqueued: 1)
        }

        @Test("Apple resetting every connection: dead after MAX_ATTEMPTS, with the connection error kept")
        func resetForever() async throws {
            let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(faults: FaultRates(connectionReset: 1)))
            let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("ans-2")]), order: "reset-forever")
            try h.drain { $0.retry.maxAttempts = 3 }
            let job = try h.job(id)
            #expect(job["state"] == "dead", "\(job)")
            #expect(job["reason"] == "retries_exhausted")
            #expect(job["attempts"] == "3")
            #expect(job["last_error"]?.isEmpty == false)
            let lastError = job["last_error"] ?? ""
            #expect(lastError.lowercased().contains("reset") || lastError.contains("connection"), "\(lastError)")
            #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
            try Invariants.check(h.db, enqueued: 1)
        }

        @Test("a hang past the timeout on every call but the last: retried, then verified; a truncated answer is no verdict")
        func hangAndTruncated() async throws {
            // A hang outlasts the drain's deadline: only the client's 5 s timeout lets the job finish in time (5 s
            // rather than 0.5 s, so that no ordinary answer on a loaded machine costs an attempt).
            let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(hangSeconds: 40), timeoutSeconds: 5)
            let hung = try h.enqueue(
                Harness.receipt(purchases: [Harness.purchase("ans-3")], faults: [.hang, .hang]), order: "hang"
            )
            // A subscription: Apple's answer carries latest_receipt (the whole receipt); half of it is broken JSON.
            let truncated = try h.enqueue(
                Harness.receipt(purchases: [Harness.purchase("ans-4", expiresInMs: 86_400_000)], faults: [.truncated, .truncated]),
                order: "truncated"
            )
            try await h.drainWithoutBlocking(timeout: 35)
            #expect(try h.job(hung)["state"] == "verified")
            #expect(try h.job(hung)["attempts"] == "3")
            #expect(try h.job(truncated)["state"] == "verified")
            #expect(try h.job(truncated)["attempts"] == "3")
            try Invariants.check(h.db, enqueued: 2)
        }

        @Test("an answer whose outcome cannot be written (a 10 KB transaction id): the job ends final, its neighbours verified")
        func unwritableOutcome() async throws {
            let h = try Harness()
            var generator = SystemRandomNumberGenerator()
            let huge = String((0..<10_240).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement(using: &generator)! })
            let poisoned = try h.enqueue(Harness.receipt(purchases: [Harness.purchase(huge, product: "gems")]), order: "poison", product: "gems")
            let neighbours = try (0..<10).map { (index: Int) -> Int64 in
                try h.enqueue(Harness.receipt(purchases: [Harness.purchase("neighbour-\(index)")]), order: "neighbour-\(index)")
            }
            try await h.drainWithoutBlocking(timeout: 60) {
                $0.leaseSeconds = 2
                $0.retry.maxAttempts = 3
            }
            for id in neighbours { #expect(try h.job(id)["state"] == "verified") }
            let job = try h.job(poisoned)
            #expect(job["state"] == "dead", "\(job)")
            #expect(job["last_error"]?.contains("index row") == true, "\(job["last_error"] ?? "")")
            try Invariants.check(h.db, enqueued: 11)
        }

        @Test("a receipt with 5,000 purchases: verified, the right one credited, and the small jobs beside it verified too")
        func enormousPurchaseHistory() async throws {
            let h = try Harness(timeoutSeconds: 20)
            // Short ids keep the receipt under the 1 MiB limit.
            let purchases = (0..<5_000).map { (index: Int) -> InAppTransaction in
                let product: String = index % 2 == 0 ? "gems" : "coins"
                let ago: Int64 = 10_000_000 - Int64(index) * 1000
                return InAppTransaction(
                    quantity: 1, productId: product, transactionId: String(index), originalTransactionId: String(index),
                    purchaseDateMs: Harness.now - ago
                )
            }
            let receipt = Harness.receipt(purchases: purchases)
            try #require(receipt.utf8.count < 1 << 20, "the receipt is \(receipt.utf8.count) bytes")
            let newest = try h.enqueue(receipt, order: "big-1", product: "gems")
            let chosen = try h.enqueue(receipt, order: "big-2", product: "coins", transaction: "2501")
            let next = try h.enqueue(receipt, order: "big-3", product: "gems")
            let small = try (0..<20).map { (index: Int) -> Int64 in
                try h.enqueue(Harness.receipt(purchases: [Harness.purchase("small-\(index)")]), order: "small-\(index)")
            }
            try await h.drainWithoutBlocking(timeout: 120)
            #expect(try h.job(newest)["state"] == "verified", "\((try? h.job(newest)) ?? [:])")
            #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE order_id = 'big-1'") == "4998")
            #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE order_id = 'big-2'") == "2501")
            #expect(try h.scalar("SELECT transaction_id FROM receipt_transactions WHERE order_id = 'big-3'") == "4996")
            #expect(try h.job(chosen)["state"] == "verified")
            #expect(try h.job(next)["state"] == "verified")
            for id in small { #expect(try h.job(id)["state"] == "verified") }
            // The verdict stored for the API layer stays small: not the whole purchase history.
            let resultBytes = try h.scalar("SELECT max(octet_length(result::text)) FROM receipt_jobs WHERE order_id LIKE 'big-%'")
            #expect((Int(resultBytes ?? "") ?? .max) < 64 * 1024, "result is \(resultBytes ?? "?") bytes")
            try Invariants.check(h.db, enqueued: 23)
        }
    }
}
