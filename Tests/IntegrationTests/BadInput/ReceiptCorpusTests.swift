import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
import Workers

extension BadInput {
    /// Receipts that are not receipts, through enqueue_receipt() and through rows inserted directly (the worker's own
    /// check), each with its exact final state, reason and last error.
    @Suite("Bad input: receipts", .ownThread)
    struct ReceiptCorpusTests {
        struct Case: CustomStringConvertible {
            var name: String
            var receipt: String
            var state: String
            var reason: String
            /// What last_error must contain.
            var error: String
            var description: String { name }
        }

        static let limit = 1 << 20

        static var garbage: String {
            var generator = SystemRandomNumberGenerator()
            return Data((0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
        }

        /// A scenario receipt with a line break every 76 characters, as iOS and MIME encoders write it.
        static func wrapped(_ base64: String, every width: Int = 76, separator: String = "\r\n") -> String {
            var lines: [Substring] = []
            var rest = Substring(base64)
            while !rest.isEmpty {
                lines.append(rest.prefix(width))
                rest = rest.dropFirst(width)
            }
            return lines.joined(separator: separator) + "\n"
        }

        static let cases: [Case] = [
            Case(name: "empty", receipt: "", state: "rejected", reason: "malformed_input", error: "receipt_data is empty"),
            Case(name: "whitespace", receipt: " \t\r\n  \n", state: "rejected", reason: "malformed_input", error: "receipt_data is empty"),
            Case(name: "not base64", receipt: "not base64!", state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "non-ASCII letters", receipt: "QUFB€QUFBé===", state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "padding in the middle", receipt: "QQ==QUFB", state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "length not a multiple of 4", receipt: "QUFBQ", state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "only padding", receipt: "====", state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "a JSON receipt instead of base64", receipt: #"{"receipt-data":"x"}"#, state: "rejected", reason: "malformed_input", error: "not base64"),
            Case(name: "base64 of garbage", receipt: garbage, state: "rejected", reason: "invalid_receipt", error: "21002"),
            Case(name: "base64 of one byte", receipt: "AA==", state: "rejected", reason: "invalid_receipt", error: "21002"),
            Case(name: "base64 of JSON that is no receipt", receipt: Data(#"{"hello":"world"}"#.utf8).base64EncodedString(),
                 state: "rejected", reason: "invalid_receipt", error: "21002"),
            Case(name: "base64 with CRLF line breaks", receipt: wrapped(Harness.receipt(purchases: [Harness.purchase("wrap-1", product: "gems")])),
                 state: "verified", reason: "", error: ""),
            Case(name: "base64 with LF breaks every 64 and spaces", receipt: " " + wrapped(Harness.receipt(purchases: [Harness.purchase("wrap-2", product: "gems")]), every: 64, separator: "\n ") + "\t",
                 state: "verified", reason: "", error: ""),
            Case(name: "exactly the size limit", receipt: String(repeating: "QUFB", count: limit / 4),
                 state: "rejected", reason: "invalid_receipt", error: "21002"),
            Case(name: "one byte over the size limit", receipt: String(repeating: "QUFB", count: limit / 4) + "\n",
                 state: "rejected", reason: "malformed_input", error: "receipt_data is 1048577 bytes, over the limit of 1048576"),
            Case(name: "10 MiB", receipt: String(repeating: "QUFB", count: 10 * limit / 4),
                 state: "rejected", reason: "malformed_input", error: "receipt_data is 10485760 bytes, over the limit of 1048576"),
        ]

        @Test("through enqueue_receipt(): exact state, reason and error for each", arguments: [false, true])
        func corpus(direct: Bool) async throws {
            let h = try Harness()
            var ids: [(Case, Int64)] = []
            for (index, item) in Self.cases.enumerated() {
                let order = "corpus-\(index)"
                if direct {
                    // Rows the API layer inserted itself, bypassing enqueue_receipt(): the worker must judge them alike.
                    let id = try #require(try h.scalar(
                        """
                        INSERT INTO receipt_jobs (bundle_id, order_id, user_id, product_id, receipt_data)
                        VALUES ('com.example.app', $1, 'user-1', 'gems', $2) RETURNING id
                        """, [order, item.receipt]
                    ).flatMap { Int64($0) })
                    ids.append((item, id))
                } else {
                    ids.append((item, try h.enqueue(item.receipt, order: order, product: "gems")))
                }
            }
            try await h.drainWithoutBlocking()
            for (item, id) in ids {
                let job = try h.job(id)
                #expect(job["state"] == item.state, "\(item.name): \(job)")
                #expect(job["reason"] == item.reason, "\(item.name): \(job)")
                let lastError = job["last_error"] ?? "?"
                #expect(item.error.isEmpty ? lastError.isEmpty : lastError.contains(item.error), "\(item.name): \(lastError)")
                if item.reason == "malformed_input" {
                    #expect(job["attempts"] == (direct ? "1" : "0"), "\(item.name)")
                    #expect(job["apple_status"] == "", "\(item.name) reached Apple")
                }
                if item.reason == "invalid_receipt" {
                    #expect(job["attempts"] == "3", "\(item.name): 21002 is retried, then invalid_receipt")
                    #expect(job["apple_status"] == "21002")
                }
                // A hash of every receipt is kept, the receipt itself only when it can be sent to Apple.
                let stored = try h.db.query(
                    "SELECT receipt_hash, receipt_data IS NULL, receipt_bytes FROM receipt_jobs WHERE id = $1", [String(id)]
                ).rows[0]
                #expect(stored[0]?.count == 64, "\(item.name): no receipt_hash")
                #expect(stored[2] == String(item.receipt.utf8.count), "\(item.name): receipt_bytes")
                if !direct {
                    #expect(stored[1] == (item.reason == "malformed_input" ? "t" : "f"), "\(item.name): receipt_data kept or not")
                }
            }
            // Nothing malformed reached Apple: only the 21002 cases (3 attempts each) and the two verified ones.
            let apple = ids.filter { $0.0.reason == "invalid_receipt" }.count * 3 + ids.filter { $0.0.state == "verified" }.count
            #expect(h.fake.stats().total == apple)
            try Invariants.check(h.db, enqueued: Self.cases.count)
        }

        @Test("the worker's input check and enqueue_receipt()'s agree on every receipt of the corpus")
        func checksAgree() async throws {
            let h = try Harness()
            let extra = ["A", "AA", "AAA", "AAAA", "AAA=", "AA==", "A===", "=AAA", "AA=A", "QUFB\u{A0}", "\u{FEFF}QUFB",
                         "QUFB\u{0B}", "QU\u{0C}FB", "QUFB\u{2028}", "QUFB-_", "QUFB\r\n\r\n", "\nQUFB", "QUFBQUFB="]
            for receipt in Self.cases.map(\.receipt) + extra {
                let sql = try h.scalar("SELECT coalesce(receipt_input_problem($1), 'ok')", [receipt])
                let swift = ReceiptInput.problem(receipt, maxBytes: Self.limit) ?? "ok"
                #expect((sql == "ok") == (swift == "ok"), "\(receipt.debugDescription.prefix(40)): SQL \(sql ?? "nil"), worker \(swift)")
            }
        }

        @Test("a receipt with a NUL character is refused before it reaches SQL; no job is made")
        func nulCharacter() async throws {
            let h = try Harness()
            let valid = Harness.receipt(purchases: [Harness.purchase("nul-1")])
            for receipt in ["QUFB\u{0}QUFB", valid + "\u{0}", "\u{0}"] {
                let error = #expect(throws: PostgresError.self) { try h.enqueue(receipt, order: "nul") }
                #expect(error?.message.contains("NUL") == true, "\(String(describing: error))")
            }
            // In SQL itself, text cannot hold NUL at all.
            #expect(throws: PostgresError.self) {
                try h.db.query("SELECT enqueue_receipt('QUFB' || chr(0), 'nul-sql', 'u', 'p', NULL, 'com.example.app')")
            }
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")
        }
    }
}
