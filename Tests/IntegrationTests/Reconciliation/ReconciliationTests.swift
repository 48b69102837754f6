import Foundation
import PostgresClient
import Testing
import Workers

/// receipt_reconcile(): Apple's in-app lines of a report day against the Production ledger in that day's Pacific
/// Time window, each kind of difference, refunds, the ledger's own gaps (no country or price), and the run stored.
@Suite("Reconciliation: the comparison", .serialized, .ownThread)
struct ReconciliationTests {
    typealias Apple = Reconciliation.AppleLine

    /// A fresh database with the schema, and a connection to it as its owner.
    final class World {
        let db: PostgresConnection
        private var next = 0

        init() throws {
            db = try PostgresConnection(try TestServer.get().freshDatabase())
        }

        deinit { db.close() }

        /// A ledger row credited directly (as the owner): Production unless said, bought at `at` (UTC).
        func credit(
            _ product: String, at: String, price: String? = "0.99", currency: String? = "USD",
            storefront: String? = "USA", quantity: Int = 1, environment: String = "Production",
            ownership: String? = nil, revokedAt: String? = nil, revocationType: String? = nil
        ) throws {
            next += 1
            let id = "rec-\(next)"
            _ = try db.query(
                """
                INSERT INTO receipt_transactions (environment, credit_key, transaction_id, original_transaction_id,
                    product_id, quantity, bundle_id, order_id, user_id, purchase_date, price, currency, storefront,
                    in_app_ownership_type, revoked_at, revocation_reason, revocation_type)
                VALUES ($1, $2, $2, $2, $3, $4::integer, 'com.example.app', $2, 'user-1', $5::timestamptz,
                        $6::numeric, $7, $8, $9, $10::timestamptz, CASE WHEN $10 IS NOT NULL THEN 'refunded' END, $11)
                """,
                [environment, id, product, String(quantity), at, price, currency, storefront, ownership, revokedAt,
                 revocationType]
            )
        }

        func run(_ date: String, _ lines: [Apple]) throws -> Reconciliation.Run {
            try Reconciliation.run(reportDate: date, source: .file, lines: lines, db)
        }

        func int(_ sql: String) throws -> Int {
            Int((try db.query(sql).rows.first?.first ?? nil) ?? "") ?? -1
        }
    }

    static func apple(
        _ sku: String, units: Int64 = 1, price: String = "0.99", currency: String = "USD", country: String = "US"
    ) -> Apple {
        Apple(sku: sku, country: country, currency: currency, price: price, units: units)
    }

    /// (kind, product, country, apple units, ledger units) of each line, for comparing.
    static func summary(_ run: Reconciliation.Run) -> [String] {
        run.lines.map { "\($0.kind) \($0.productId ?? "-") \($0.country ?? "-") \($0.appleUnits)/\($0.ledgerUnits)" }
    }

    @Test("the same sales on both sides: no difference, the run stored with its counts")
    func agreement() throws {
        let world = try World()
        try world.credit("coins", at: "2026-11-20T12:00:00Z")
        try world.credit("coins", at: "2026-11-20T13:00:00Z")
        try world.credit("pro", at: "2026-11-20T14:00:00Z", price: "4.99", currency: "EUR", storefront: "DEU")
        let run = try world.run("2026-11-20", [
            Self.apple("coins", units: 2), Self.apple("pro", price: "4.99", currency: "EUR", country: "DE"),
        ])
        #expect(run.lines.isEmpty, "\(Self.summary(run))")
        #expect(run.appleRows == 2 && run.ledgerRows == 3)
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations WHERE differences = 0 AND apple_rows = 2 "
                              + "AND ledger_rows = 3 AND source = 'file' AND finished_at IS NOT NULL") == 1)
        #expect(try world.int("SELECT count(*) FROM receipt_events WHERE kind = 'reconciliation_differences'") == 0)
    }

    @Test("each kind: missing_in_ledger, missing_in_report, unit_mismatch, price_mismatch; an event names them")
    func eachKind() throws {
        let world = try World()
        try world.credit("double", at: "2026-11-20T12:00:00Z")
        try world.credit("double", at: "2026-11-20T12:00:01Z")   // credited twice, sold once
        try world.credit("forged", at: "2026-11-20T12:00:00Z", price: "9.99")
        try world.credit("gems", at: "2026-11-20T12:00:00Z", price: "2.99", currency: "EUR", storefront: "FRA")
        _ = try world.db.query("INSERT INTO receipt_product_prices (product_id, currency, price) VALUES ('gems', 'EUR', 1.99)")
        let run = try world.run("2026-11-20", [
            Self.apple("double"), Self.apple("lost", price: "4.99"),
            Self.apple("gems", price: "2.99", currency: "EUR", country: "FR"),
        ])
        #expect(Self.summary(run).sorted() == [
            "missing_in_ledger lost US 1/0", "missing_in_report forged US 0/1", "price_mismatch gems FR 1/1",
            "unit_mismatch double US 1/2",
        ])
        let price = try #require(run.lines.first { $0.kind == "price_mismatch" })
        #expect(price.customerPrice == "2.99" && price.expectedPrice == "1.99" && price.currency == "EUR")
        let event = try world.db.query(
            "SELECT reason, environment FROM receipt_events WHERE kind = 'reconciliation_differences'"
        )
        #expect(event.rows.count == 1)
        #expect(event[0, "reason"]?.contains("4 differences") == true, "\(event.rows)")
        #expect(try world.int("SELECT differences FROM receipt_reconciliations") == 4)
    }

    @Test("price_mismatch against the ledger's own price when the product has no list price")
    func priceAgainstLedger() throws {
        let world = try World()
        try world.credit("skins", at: "2026-11-20T12:00:00Z", price: "1.99", currency: "GBP", storefront: "GBR")
        let run = try world.run("2026-11-20", [Self.apple("skins", price: "2.49", currency: "GBP", country: "GB")])
        #expect(Self.summary(run) == ["price_mismatch skins GB 1/1"])
        #expect(run.lines.first?.customerPrice == "2.49" && run.lines.first?.expectedPrice == "1.99")
    }

    @Test("the window is Apple's day in Pacific Time, summer and winter; Sandbox and Family Sharing copies are not sales")
    func window() throws {
        let world = try World()
        // 2026-11-20 is PST (UTC-8): 08:00Z to 08:00Z.
        try world.credit("winter", at: "2026-11-20T08:00:00Z")
        try world.credit("winter", at: "2026-11-21T07:59:59Z")
        try world.credit("winter", at: "2026-11-20T07:59:59Z")   // the day before, Pacific Time
        try world.credit("winter", at: "2026-11-21T08:00:00Z")   // the day after
        // 2026-07-01 is PDT (UTC-7): 07:00Z to 07:00Z.
        try world.credit("summer", at: "2026-07-01T07:00:00Z")
        try world.credit("summer", at: "2026-07-01T06:59:59Z")
        try world.credit("summer", at: "2026-07-02T07:00:00Z")
        try world.credit("winter", at: "2026-11-20T12:00:00Z", environment: "Sandbox")
        try world.credit("winter", at: "2026-11-20T12:00:00Z", ownership: "FAMILY_SHARED")
        let winter = try world.run("2026-11-20", [Self.apple("winter", units: 2)])
        #expect(winter.lines.isEmpty, "\(Self.summary(winter))")
        #expect(winter.ledgerRows == 2)
        let summer = try world.run("2026-07-01", [Self.apple("summer")])
        #expect(summer.lines.isEmpty, "\(Self.summary(summer))")
    }

    @Test("a report with refunds: Apple's negative units and prices meet the ledger's revocations of the day")
    func refunds() throws {
        let world = try World()
        // Bought on the 19th, refunded on the 20th; bought and refunded on the 20th; bought on the 20th and kept.
        try world.credit("coins", at: "2026-11-19T12:00:00Z", revokedAt: "2026-11-20T12:00:00Z")
        try world.credit("coins", at: "2026-11-20T12:00:00Z", revokedAt: "2026-11-20T13:00:00Z")
        try world.credit("coins", at: "2026-11-20T14:00:00Z")
        // A Family Sharing revocation is no refund.
        try world.credit("coins", at: "2026-11-18T12:00:00Z", revokedAt: "2026-11-20T15:00:00Z",
                         revocationType: "FAMILY_REVOKE")
        let report = [Self.apple("coins", units: 2), Self.apple("coins", units: -2, price: "-0.99")]
        let run = try world.run("2026-11-20", report)
        #expect(run.lines.isEmpty, "\(Self.summary(run))")
        // Apple refunded one more than the ledger knows of.
        let more = try world.run("2026-11-20", [Self.apple("coins", units: 2), Self.apple("coins", units: -3, price: "-0.99")])
        #expect(Self.summary(more) == ["unit_mismatch coins US -1/0"])
    }

    @Test("Apple's SKU is our product through receipt_products.sku; a ledger without country or price compares per product")
    func skuAndCoarse() throws {
        let world = try World()
        _ = try world.db.query("INSERT INTO receipt_products (product_id, kind, sku) VALUES ('coins.100', 'consumable', 'COINS_100')")
        try world.credit("coins.100", at: "2026-11-20T12:00:00Z")
        // Credited from app receipts: no price, currency or storefront.
        try world.credit("legacy", at: "2026-11-20T12:00:00Z", price: nil, currency: nil, storefront: nil)
        try world.credit("legacy", at: "2026-11-20T12:00:00Z", price: nil, currency: nil, storefront: nil)
        let run = try world.run("2026-11-20", [
            Self.apple("COINS_100"), Self.apple("legacy", country: "US"), Self.apple("legacy", currency: "EUR", country: "DE"),
        ])
        #expect(run.lines.isEmpty, "\(Self.summary(run))")
        let short = try world.run("2026-11-20", [Self.apple("COINS_100"), Self.apple("legacy", country: "US")])
        #expect(Self.summary(short) == ["unit_mismatch legacy - 1/2"])
        #expect(short.lines.first?.currency == nil && short.lines.first?.customerPrice == nil)
        // Without the mapping, COINS_100 is a product of its own that nothing here credited.
        _ = try world.db.query("UPDATE receipt_products SET sku = NULL")
        let unmapped = try world.run("2026-11-20", [Self.apple("COINS_100"), Self.apple("legacy", units: 2)])
        #expect(Self.summary(unmapped).sorted() == ["missing_in_ledger COINS_100 US 1/0", "missing_in_report coins.100 US 0/1"])
    }

    @Test("a report line that is not {sku, country, currency, price, units} is refused, and nothing is stored")
    func badLines() throws {
        let world = try World()
        for bad in [Self.apple(""), Self.apple("x", price: "1,99"), Self.apple("x", currency: "usd"),
                    Self.apple("x", country: "")] {
            #expect(throws: PostgresError.self) { try world.run("2026-11-20", [Self.apple("ok"), bad]) }
        }
        #expect(try world.int("SELECT count(*) FROM receipt_reconciliations") == 0)
    }
}
