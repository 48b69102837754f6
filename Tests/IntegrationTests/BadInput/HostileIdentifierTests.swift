import AppStoreModel
import FakeAppStore
import Foundation
import PostgresClient
import Testing

extension BadInput {
    /// Order, user and product ids an attacker (or a careless API layer) could choose: SQL, quotes, backslashes,
    /// Unicode that normalises alike, control characters, 10 KB strings. Each goes enqueue → Apple → verdict →
    /// ledger and must come out byte for byte as it went in, with every table intact.
    @Suite("Bad input: hostile identifiers", .ownThread)
    struct HostileIdentifierTests {
        static func random(_ count: Int) -> String {
            var generator = SystemRandomNumberGenerator()
            let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'\"\\;-_$%")
            return String((0..<count).map { _ in alphabet.randomElement(using: &generator)! })
        }

        static let hostile: [String] = [
            "'; DROP TABLE receipt_jobs; --",
            "Robert'); DELETE FROM receipt_transactions; --",
            "\" OR 1=1 --",
            "back\\slash \\\\ \\' \\x00 \\n",
            "$1 $$ dollar-quoted $$ $body$",
            "%_ like wildcards %",
            "caf\u{E9}",                              // precomposed é
            "cafe\u{301}",                            // e + combining acute: equal to the above in Swift, not in SQL
            "\u{202E}lanigiro \u{200B}zero-width",
            "注文 🧾 ünïcödé",
            "line one\nline two\r\n{\"level\":\"critical\",\"message\":\"forged\"}",
            "tab\there",
            " padded ",
            "NULL",
            "\"}],\"candidates\":[{\"transaction_id\":\"x\"}]",
            String(String(repeating: "'; DROP TABLE receipt_jobs; -- ", count: 33).prefix(1000)),  // the longest order id
        ]

        static func hex(_ text: String) -> String {
            text.utf8.map { String(format: "%02x", $0) }.joined()
        }

        @Test("hostile ids as order, user and product: verified, stored byte for byte, tables intact")
        func hostileIds() async throws {
            let h = try Harness()
            var jobs: [(String, Int64)] = []
            for (index, value) in Self.hostile.enumerated() {
                let purchase = Harness.purchase("hostile-\(index)", product: value)
                let receipt = Harness.receipt(purchases: [purchase])
                let id = try h.enqueue(receipt, order: value, user: value, product: value, transaction: "hostile-\(index)")
                // Enqueued again: the same job (the same bytes are the same order).
                #expect(try h.enqueue(receipt, order: value, user: value, product: value, transaction: "hostile-\(index)") == id)
                jobs.append((value, id))
            }
            #expect(Set(jobs.map(\.1)).count == Self.hostile.count, "two distinct ids were taken for one order")
            try await h.drainWithoutBlocking()
            for (value, id) in jobs {
                let label = value.debugDescription.prefix(60)
                let job = try h.job(id)
                #expect(job["state"] == "verified", "\(label): \(job)")
                let stored = try h.db.query(
                    """
                    SELECT encode(convert_to(j.order_id, 'UTF8'), 'hex'), encode(convert_to(j.user_id, 'UTF8'), 'hex'),
                           encode(convert_to(t.order_id, 'UTF8'), 'hex'), encode(convert_to(t.user_id, 'UTF8'), 'hex'),
                           encode(convert_to(t.product_id, 'UTF8'), 'hex')
                    FROM receipt_jobs j JOIN receipt_transactions t ON t.job_id = j.id WHERE j.id = $1
                    """,
                    [String(id)]
                ).rows
                let row = try #require(stored.first, "\(label): no ledger row")
                for column in row { #expect(column == Self.hex(value), "\(label): stored differently") }
            }
            for table in ["receipt_jobs", "receipt_transactions", "receipt_apps", "receipt_purchase_owners"] {
                #expect(try h.scalar("SELECT to_regclass($1) IS NOT NULL", [table]) == "t", "\(table) is gone")
            }
            #expect(try h.scalar("SELECT count(*) FROM receipt_apps") == "2")
            try Invariants.check(h.db, enqueued: Self.hostile.count)
        }

        @Test("10 KB of random characters as user and product id: verified; order ids over 1000 bytes: a clear refusal")
        func longIds() async throws {
            let h = try Harness()
            let user = Self.random(10_240)
            let product = Self.random(10_240)
            let receipt = Harness.receipt(purchases: [Harness.purchase("big-id-1", product: product)])
            let id = try h.enqueue(receipt, order: "big-ids", user: user, product: product)
            // The longest order ids allowed, incompressible, in bytes and in two-byte characters.
            let longest = [Self.random(1000), String(repeating: "é", count: 500)]
            let accepted = try longest.enumerated().map { index, order in
                try h.enqueue(Harness.receipt(purchases: [Harness.purchase("long-order-\(index)")]), order: order)
            }
            try await h.drainWithoutBlocking()
            let job = try h.job(id)
            #expect(job["state"] == "verified", "\(job)")
            #expect(try h.scalar("SELECT user_id = $1 AND product_id = $2 FROM receipt_transactions WHERE job_id = $3",
                                 [user, product, String(id)]) == "t")
            for job in accepted { #expect(try h.job(job)["state"] == "verified") }

            // One byte more, or 10 KB: refused at enqueue with a message that names the limit, no job made.
            for order in [Self.random(1001), String(repeating: "é", count: 501), Self.random(10_240)] {
                let error = #expect(throws: PostgresError.self) {
                    try h.enqueue(Harness.receipt(purchases: [Harness.purchase("too-long")]), order: order)
                }
                #expect(error?.sqlState == "22001", "\(String(describing: error))")
                #expect(error?.message.contains("order_id") == true && error?.message.contains("1000 bytes") == true,
                        "\(String(describing: error))")
            }
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "3")
            try Invariants.check(h.db, enqueued: 3)
        }
    }
}
