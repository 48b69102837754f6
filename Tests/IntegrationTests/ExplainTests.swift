#if os(Linux)
import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// `receipt-worker explain`, the built binary against a real PostgreSQL: an order's, a customer's and a
/// transaction's story, the bound per section, nothing found, bad input, escaping, and no receipt ever printed.
@Suite("explain: support's one look at an order, a customer, a transaction", .serialized, .ownThread)
struct ExplainTests {
    static let alice = LostOrderTests.alice

    /// `receipt-worker explain` with `arguments` against `h`'s database: its status, standard output, and
    /// standard error.
    static func explain(_ h: Harness, _ arguments: [String], url: String? = nil) async throws
        -> (status: Int32?, output: String, errors: String)
    {
        let child = try ChildProcess(
            ["explain"] + arguments,
            environment: ChildProcess.environment(setting: ["DATABASE_URL": url ?? h.databaseURL]),
            separateErrors: true
        )
        let status = await child.exit(within: 60)
        return (status, child.output, child.errors)
    }

    /// The `--json` document.
    static func document(_ output: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8))
        return try #require(object as? [String: Any], "\(output)")
    }

    /// A section's rows.
    static func rows(_ document: [String: Any], _ section: String) -> [[String: Any]] {
        ((document[section] as? [String: Any])?["rows"] as? [[String: Any]]) ?? []
    }

    @Test("--order: the order, its credit, the notification that brought it, its event and the token's owner")
    func order() async throws {
        let h = try LostOrderTests.harness()
        #expect(try h.scalar("SELECT register_account_token('alice', $1)", [Self.alice]) == "0")
        #expect(try LostOrderTests.apply(h, try LostOrderTests.charge("3000000000000901", token: Self.alice)) == "applied")
        // Another customer's order, which must not show.
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("other-1")]), order: "someone-else")

        let json = try await Self.explain(h, ["--order", "apple:3000000000000901", "--json"])
        #expect(json.status == 0, "\(json.output) \(json.errors)")
        let document = try Self.document(json.output)
        #expect(document["found"] as? Bool == true)
        let orders = Self.rows(document, "orders")
        #expect(orders.map { $0["state"] as? String } == ["verified"], "\(orders)")
        #expect(orders.first?["kind"] as? String == "announced")
        #expect(orders.first?["credited"] as? String == "3000000000000901")
        #expect(orders.first?["source"] as? String == "notification")
        #expect(Self.rows(document, "credits").map { $0["user"] as? String } == ["alice"])
        let notifications = Self.rows(document, "notifications")
        #expect(notifications.map { $0["type"] as? String } == ["ONE_TIME_CHARGE"], "\(notifications)")
        #expect(notifications.first?["state"] as? String == "applied")
        #expect(Self.rows(document, "events").map { $0["kind"] as? String } == ["credited"])
        #expect(Self.rows(document, "tokens").map { $0["user"] as? String } == ["alice"])

        let text = try await Self.explain(h, ["--order", "apple:3000000000000901"])
        #expect(text.status == 0)
        #expect(text.output.contains("Orders (receipt_jobs)") && text.output.contains("ONE_TIME_CHARGE"), "\(text.output)")
        #expect(!text.output.contains("someone-else"), "\(text.output)")
        // --bundle-id narrows the order to an app: another app has no such order.
        let elsewhere = try await Self.explain(h, ["--order", "apple:3000000000000901", "--bundle-id", "com.example.other"])
        #expect(elsewhere.status == 3, "\(elsewhere.output)")
    }

    @Test("--transaction: a purchase kept unclaimed, then claimed by support, with its chain's whole story")
    func transaction() async throws {
        let h = try LostOrderTests.harness()
        #expect(try LostOrderTests.apply(h, try LostOrderTests.charge("3000000000000902", token: nil)) == "applied")
        let waiting = try Self.document(try await Self.explain(h, ["--transaction", "3000000000000902", "--json"]).output)
        let unclaimed = Self.rows(waiting, "unclaimed")
        #expect(unclaimed.count == 1, "\(waiting)")
        #expect(unclaimed.first?["claimed"] is NSNull, "\(unclaimed)")
        #expect((unclaimed.first?["note"] as? String)?.contains("no appAccountToken") == true, "\(unclaimed)")
        #expect(Self.rows(waiting, "credits").isEmpty)
        #expect(Self.rows(waiting, "notifications").count == 1)

        _ = try h.db.query("SELECT claim_purchase('3000000000000902', 'carol', 'ticket-9')")
        let claimed = try Self.document(try await Self.explain(h, ["--transaction", "3000000000000902", "--json"]).output)
        #expect(Self.rows(claimed, "orders").map { $0["order"] as? String } == ["ticket-9"])
        #expect(Self.rows(claimed, "orders").first?["source"] as? String == "claim")
        #expect(Self.rows(claimed, "credits").map { $0["user"] as? String } == ["carol"])
        #expect(Self.rows(claimed, "unclaimed").first?["claimed"] is String, "\(claimed)")
        #expect(Self.rows(claimed, "events").map { $0["reason"] as? String } == ["claim"])
    }

    @Test("--user: at most 200 rows a section, the latest, oldest first, with a line saying more exist")
    func userBounded() async throws {
        let h = try Harness()
        // 201 orders rejected at once (malformed), oldest first by id.
        _ = try h.db.query(
            """
            SELECT enqueue_receipt('not base64!', 'bulk-' || g, 'bulk-user', 'coins.100', bundle_id => 'com.example.app')
            FROM generate_series(1, 201) g
            """
        )
        let result = try await Self.explain(h, ["--user", "bulk-user", "--json"])
        #expect(result.status == 0, "\(result.errors)")
        let document = try Self.document(result.output)
        let orders = try #require(document["orders"] as? [String: Any])
        #expect(orders["more"] as? Bool == true)
        let rows = Self.rows(document, "orders")
        #expect(rows.count == 200)
        // The latest 200: bulk-1 is left out; oldest first.
        #expect(rows.first?["order"] as? String == "bulk-2", "\(rows.first ?? [:])")
        #expect(rows.last?["order"] as? String == "bulk-201")
        let text = try await Self.explain(h, ["--user", "bulk-user"])
        #expect(text.output.contains("more exist: the latest 200 are shown"), "\(text.output.suffix(500))")
        #expect(text.output.contains("200+ orders"), "\(text.output.prefix(300))")
    }

    @Test("no receipt and no signed data is ever printed; values from the database are escaped for the terminal")
    func noReceiptsAndEscaped() async throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("secret-1")])
        _ = try h.enqueue(receipt, order: "o-secret", user: "u-secret")
        let hostile = "mallory\u{1b}]0;pwned\u{07}\u{202e}"
        _ = try h.db.query("SELECT enqueue_receipt('not base64!', 'o-hostile', $1, 'coins.100', bundle_id => 'com.example.app')", [hostile])

        let secret = try await Self.explain(h, ["--user", "u-secret"])
        #expect(secret.status == 0)
        #expect(secret.output.contains("o-secret"))
        #expect(!secret.output.contains(receipt) && !secret.output.contains(String(receipt.prefix(40))), "\(secret.output)")
        let secretJSON = try await Self.explain(h, ["--user", "u-secret", "--json"])
        #expect(!secretJSON.output.contains(String(receipt.prefix(40))))

        let text = try await Self.explain(h, ["--user", hostile])
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output.contains("mallory\\u{1b}]0;pwned\\u{7}\\u{202e}"), "\(text.output)")
        #expect(!text.output.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\u{202e}" })
        let json = try await Self.explain(h, ["--user", hostile, "--json"])
        #expect(!json.output.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{07}" || $0 == "\u{202e}" })
        #expect(Self.rows(try Self.document(json.output), "orders").first?["user"] as? String == hostile)
    }

    @Test("nothing found: exit 3; bad input (no subject, two, a transaction id that is not digits): exit 2")
    func notFoundAndBadInput() async throws {
        let h = try Harness()
        let nothing = try await Self.explain(h, ["--order", "no-such-order"])
        #expect(nothing.status == 3, "\(nothing.output) \(nothing.errors)")
        #expect(nothing.output.contains("nothing found"))
        let nothingJSON = try await Self.explain(h, ["--transaction", "4000000000000000", "--json"])
        #expect(nothingJSON.status == 3)
        #expect(try Self.document(nothingJSON.output)["found"] as? Bool == false)
        for arguments in [[], ["--order", "a", "--user", "b"], ["--transaction", "12a"], ["--user", ""],
                          ["--user", "u", "--bundle-id", "com.example.app"]] {
            let bad = try await Self.explain(h, arguments)
            #expect(bad.status == 2, "\(arguments): \(bad.output) \(bad.errors)")
        }
    }
}
#endif
