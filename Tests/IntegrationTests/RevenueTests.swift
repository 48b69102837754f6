import FakeAppStore
import Foundation
import PostgresClient
import Testing
@testable import Workers

/// Prices in the ledger, from signed transactions to receipt_revenue and the price list's mismatches.
@Suite("Revenue", .serialized, .ownThread)
struct RevenueTests {
    /// A consumable of `price` milliunits bought by user-1 as a signed transaction, credited.
    static func credited(_ h: Harness, transactionId: String, order: String, price: Int64) throws {
        let object: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": "com.example.app",
            "productId": "coins.100", "environment": "Production", "quantity": 1,
            "purchaseDate": Harness.now - 60_000, "signedDate": Harness.now, "type": "Consumable",
            "inAppOwnershipType": "PURCHASED", "transactionReason": "PURCHASE", "price": price, "currency": "CNY",
            "storefront": "CHN", "offerType": 2, "offerDiscountType": "PAY_UP_FRONT",
        ]
        let jws = try Harness.signer.get().sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        _ = try SignedTransactionTests.enqueue(h, jws, order: order, product: "coins.100")
        try h.drain()
    }

    @Test("the ledger keeps Apple's price in currency units; a prorated REFUND keeps the credit and counts its share")
    func proratedRefund() throws {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('coins.100', 'consumable')")
        try Self.credited(h, transactionId: "3000000000000001", order: "o-1", price: 298_000)
        try Self.credited(h, transactionId: "3000000000000002", order: "o-2", price: 298_000)
        #expect(
            try h.scalar(
                """
                SELECT price || ' ' || currency || ' ' || storefront || ' ' || offer_type || ' ' || offer_discount_type
                       || ' ' || transaction_reason FROM receipt_transactions WHERE order_id = 'o-1'
                """
            ) == "298.000 CNY CHN 2 PAY_UP_FRONT PURCHASE"
        )

        var prorated = RefundRequestTests.coins
        prorated["revocationDate"] = Harness.now
        prorated["revocationReason"] = 0
        prorated["revocationType"] = "REFUND_PRORATED"
        prorated["revocationPercentage"] = 25_000
        _ = try NotificationTests.receive(h, try RefundRequestTests.notification("REFUND", transaction: prorated))
        var full = RefundRequestTests.coins
        full["transactionId"] = "3000000000000002"
        full["originalTransactionId"] = "3000000000000002"
        full["revocationDate"] = Harness.now
        full["revocationReason"] = 1
        full["revocationType"] = "REFUND_FULL"
        full["revocationPercentage"] = 100_000
        _ = try NotificationTests.receive(h, try RefundRequestTests.notification("REFUND", transaction: full))
        try h.drain()

        #expect(
            try h.scalar(
                """
                SELECT (revoked_at IS NULL) || ' ' || revocation_type || ' ' || revocation_percentage
                FROM receipt_transactions WHERE order_id = 'o-1'
                """
            ) == "true REFUND_PRORATED 25000",
            "the prorated credit stays"
        )
        #expect(
            try h.scalar("SELECT (revoked_at IS NOT NULL) || ' ' || revocation_type FROM receipt_transactions WHERE order_id = 'o-2'")
                == "true REFUND_FULL"
        )
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'refunded_prorated'") == "1")
        // 2 × 298 gross; 298 × 0.25 + 298 refunded.
        #expect(
            try h.scalar(
                """
                SELECT purchases || ' ' || gross::numeric(12,2) || ' ' || refunded::numeric(12,2) || ' '
                       || net::numeric(12,2)
                FROM receipt_revenue WHERE product_id = 'coins.100' AND currency = 'CNY' AND environment = 'Production'
                """
            ) == "2 596.00 372.50 223.50"
        )
        // Only the revocation columns move, and nothing else of the ledger.
        #expect(throws: PostgresError.self) {
            try h.db.query("UPDATE receipt_transactions SET price = 1")
        }
    }

    @Test("a credit whose Apple price differs from the price list is credited, with a price_mismatch event and view row")
    func priceMismatch() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('coins.100', 'consumable')")
        _ = try h.db.query("INSERT INTO receipt_product_prices (product_id, currency, price) VALUES ('coins.100', 'CNY', 398)")
        try Self.credited(h, transactionId: "3000000000000001", order: "o-1", price: 298_000)
        try Self.credited(h, transactionId: "3000000000000002", order: "o-2", price: 398_000)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == "2", "never a rejection")
        #expect(
            try h.db.query("SELECT order_id FROM receipt_events WHERE kind = 'price_mismatch'").rows.map { $0[0] }
                == ["o-1"]
        )
        #expect(
            try h.scalar(
                "SELECT order_id || ' ' || apple_price || ' ' || list_price || ' ' || difference FROM receipt_price_mismatches"
            ) == "o-1 298.000 398 -100.000"
        )
        #expect(try h.scalar("SELECT count(*) FROM receipt_price_mismatches") == "1")
    }

    @Test("a period credited by DID_RENEW keeps the renewal's price, currency, storefront and offer; it counts in receipt_revenue and is checked against the price list")
    func renewalRevenue() throws {
        let h = try NotificationTests.subscribed()
        _ = try h.db.query(
            "INSERT INTO receipt_product_prices (product_id, currency, price) VALUES ('pro.monthly', 'JPY', 980)"
        )
        let start = Harness.now - 60_000
        var period = NotificationTests.period("2000000000000001", wol: "2000000000000101", start: start)
        period.merge([
            "price": 1_200_000, "currency": "JPY", "storefront": "JPN", "offerType": 1,
            "offerDiscountType": "PAY_AS_YOU_GO", "transactionReason": "RENEWAL", "inAppOwnershipType": "PURCHASED",
        ]) { $1 }
        _ = try NotificationTests.receive(h, try NotificationTests.Note(type: "DID_RENEW", transaction: period).signed())
        try h.drain()
        #expect(
            try h.scalar(
                """
                SELECT price || ' ' || currency || ' ' || storefront || ' ' || offer_type || ' ' || offer_discount_type
                       || ' ' || transaction_reason FROM receipt_transactions WHERE transaction_id = '2000000000000001'
                """
            ) == "1200.000 JPY JPN 1 PAY_AS_YOU_GO RENEWAL"
        )
        #expect(
            try h.scalar(
                "SELECT purchases || ' ' || gross || ' ' || net FROM receipt_revenue WHERE currency = 'JPY'"
            ) == "1 1200.000 1200.000"
        )
        #expect(
            try h.scalar("SELECT apple_price || ' ' || list_price FROM receipt_price_mismatches") == "1200.000 980",
            "a renewal at a price the company does not list"
        )
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'price_mismatch'") == "1")
    }

    @Test("a purchase read through the Server API keeps the price Apple answered in its storefront's currency")
    func serverAPIPrice() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('coins.100', 'consumable')")
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "coins.100", storefront: "JPN", basePrice: 1_990),
        ])
        _ = try ServerAPITests.enqueueTransaction(h, added[0].transactionId, order: "o-jp", product: "coins.100")
        try h.drain(serverAPI: true)
        #expect(
            try h.scalar("SELECT price || ' ' || currency || ' ' || storefront FROM receipt_transactions")
                == "299.000 JPY JPN"
        )
        #expect(try h.scalar("SELECT gross FROM receipt_revenue WHERE currency = 'JPY'") == "299.000")
    }
}
