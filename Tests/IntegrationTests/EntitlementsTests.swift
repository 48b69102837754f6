import Foundation
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing

/// The view receipt_entitlements (sql/views/receipt_entitlements.sql): what a user owns now, and until when.
@Suite("receipt_entitlements: what a user owns now, and until when", .serialized, .ownThread)
struct EntitlementsTests {
    static let day: Int64 = 86_400_000

    static func purchase(
        _ transaction: String, _ product: String, daysAgo: Int64 = 1, expiresInDays: Int64? = nil,
        lineItem: String? = nil
    ) -> Purchase {
        Purchase(
            transactionId: transaction, webOrderLineItemId: lineItem, productId: product,
            purchaseDateMs: Harness.now - daysAgo * day, expiresDateMs: expiresInDays.map { Harness.now + $0 * day }
        )
    }

    /// The user's rows of the view, as "product kind expires" lines; expires as milliseconds, "forever" for NULL.
    static func entitlements(_ h: Harness, _ user: String) throws -> [String] {
        try h.db.query(
            """
            SELECT product_id || ' ' || coalesce(kind, '-') || ' '
                   || coalesce((extract(epoch FROM expires_at) * 1000)::bigint::text, 'forever') || ' '
                   || environment || ' ' || bundle_id || ' ' || last_transaction_id || ' ' || original_transaction_id
                   || ' ' || (last_credited_at IS NOT NULL)::text
            FROM receipt_entitlements WHERE user_id = $1 ORDER BY product_id
            """,
            [user]
        ).rows.map { $0[0] ?? "" }
    }

    static func ledgerId(_ h: Harness, _ transaction: String) throws -> String {
        try #require(try h.scalar("SELECT id::text FROM receipt_transactions WHERE transaction_id = $1", [transaction]))
    }

    @Test("lifetime, active, expired, revoked, consumable, stacked and unlisted products; a reinstatement")
    func owned() throws {
        let h = try Harness()
        _ = try h.db.query(
            """
            INSERT INTO receipt_products (product_id, kind, duration) VALUES
                ('lifetime', 'non_consumable', NULL), ('remove.ads', 'non_consumable', NULL),
                ('pro.monthly', 'auto_renewable', NULL), ('pro.yearly', 'auto_renewable', NULL),
                ('coins', 'consumable', NULL), ('season.pass', 'non_renewing', '1 month')
            """
        )
        let orders: [(String, String, Purchase)] = [
            ("e-1", "erin", Self.purchase("life-1", "lifetime", daysAgo: 400)),
            ("e-2", "erin", Self.purchase("ads-1", "remove.ads", daysAgo: 30)),
            ("e-3", "erin", Self.purchase("pm-1", "pro.monthly", daysAgo: 40, expiresInDays: -10, lineItem: "w-1")),
            ("e-4", "erin", Self.purchase("pm-2", "pro.monthly", daysAgo: 10, expiresInDays: 20, lineItem: "w-2")),
            ("e-5", "erin", Self.purchase("py-1", "pro.yearly", daysAgo: 400, expiresInDays: -35, lineItem: "w-3")),
            ("e-6", "erin", Self.purchase("coin-1", "coins")),
            ("e-7", "erin", Self.purchase("sp-1", "season.pass", daysAgo: 2)),
            ("e-8", "erin", Self.purchase("sp-2", "season.pass", daysAgo: 1)),
            ("e-9", "erin", Self.purchase("legacy-1", "legacy.sub", expiresInDays: 5)),
            ("e-10", "erin", Self.purchase("legacy-2", "legacy.gems")),
            ("e-11", "erin", Self.purchase("legacy-3", "legacy.old", daysAgo: 60, expiresInDays: -30)),
            ("f-1", "frank", Self.purchase("life-2", "lifetime")),
        ]
        for (order, user, purchase) in orders {
            _ = try h.enqueue(
                Harness.receipt(purchases: [Harness.purchase(order)]), order: order, user: user,
                product: purchase.productId
            )
        }
        let done = try BatchCreditTests.verify(
            h, Dictionary(uniqueKeysWithValues: orders.map { ($0.0, [$0.2]) })
        )
        #expect(done.values.allSatisfy { $0.state == .verified }, "\(done)")

        let seasonEnd = try #require(try h.scalar(
            """
            SELECT (extract(epoch FROM purchase_date + interval '1 month' + interval '1 month') * 1000)::bigint
            FROM receipt_transactions WHERE transaction_id = 'sp-1'
            """
        ))
        let active = String(Harness.now + 20 * Self.day)
        let legacy = String(Harness.now + 5 * Self.day)
        let app = "Production com.example.app"
        let expected = [
            "legacy.sub - \(legacy) \(app) legacy-1 legacy-1 true",
            "lifetime non_consumable forever \(app) life-1 life-1 true",
            "pro.monthly auto_renewable \(active) \(app) pm-2 pm-2 true",
            "remove.ads non_consumable forever \(app) ads-1 ads-1 true",
            "season.pass non_renewing \(seasonEnd) \(app) sp-2 sp-2 true",
        ]
        #expect(try Self.entitlements(h, "erin") == expected)
        #expect(try Self.entitlements(h, "frank") == ["lifetime non_consumable forever \(app) life-2 life-2 true"])

        // Refunded: gone; refunded back (a later signed date): owned again.
        let ads = try Self.ledgerId(h, "ads-1")
        #expect(try h.scalar(
            "SELECT receipt_revocation_change($1, 'revoked', now(), 'refund', now(), 'receipt')", [ads]
        ) == "t")
        #expect(try Self.entitlements(h, "erin") == expected.filter { !$0.hasPrefix("remove.ads") })
        #expect(try h.scalar(
            """
            SELECT receipt_revocation_change($1, 'reinstated', NULL, NULL, now() + interval '1 second', 'notification')
            """,
            [ads]
        ) == "t")
        #expect(try Self.entitlements(h, "erin") == expected)

        // The current subscription period refunded: what is left of the subscription has ended, so it is not owned.
        #expect(try h.scalar(
            "SELECT receipt_revocation_change($1, 'revoked', now(), 'refund', now(), 'receipt')",
            [try Self.ledgerId(h, "pm-2")]
        ) == "t")
        #expect(try Self.entitlements(h, "erin") == expected.filter { !$0.hasPrefix("pro.monthly") })
    }

    @Test("the view reads one user's ledger rows through an index, not the whole ledger")
    func byIndex() throws {
        let h = try Harness()
        _ = try h.db.query(
            """
            INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                                              product_id, bundle_id, order_id, user_id, purchase_date, expires_date)
            SELECT 'Production', 'k-' || g, 't-' || g, 't-' || g, 'p-' || (g / 2000), 'com.example.app', 'o-' || g,
                   'u-' || (g % 2000), now(), now() + interval '1 day'
            FROM generate_series(1, 20000) g
            """
        )
        _ = try h.db.query("ANALYZE receipt_transactions")
        let plan = try h.db.query("EXPLAIN SELECT * FROM receipt_entitlements WHERE user_id = 'u-7'")
            .rows.map { $0[0] ?? "" }.joined(separator: "\n")
        #expect(plan.contains("receipt_transactions_user"), "\(plan)")
        #expect(!plan.contains("Seq Scan on receipt_transactions"), "\(plan)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_entitlements WHERE user_id = 'u-7'") == "10")
    }
}
