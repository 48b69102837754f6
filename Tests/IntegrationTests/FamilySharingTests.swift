import AppStoreModel
import Foundation
import PostgresClient
import ReceiptRules
import Testing

/// Family Sharing end to end: the ledger and receipt_entitlements record in_app_ownership_type (from a signed
/// transaction, from a receipt's entry, NULL when Apple's data does not say), and FAMILY_SHARING decides whether a
/// purchase shared by a family member is credited (grant, the default) or rejected `family_shared` (reject).
@Suite("Family Sharing: recorded in the ledger, granted or rejected", .serialized, .ownThread)
struct FamilySharingTests {
    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('lifetime', 'non_consumable')")
        return h
    }

    static func jws(_ id: String, ownership: String?) throws -> String {
        var transaction = LedgerSecurityTests.transaction(id, product: "lifetime", type: "Non-Consumable")
        transaction["inAppOwnershipType"] = ownership
        return try LedgerSecurityTests.sign(transaction)
    }

    static func receiptEntry(_ id: String, ownership: String?) -> InAppTransaction {
        var entry = Harness.purchase(id, product: "lifetime")
        entry.inAppOwnershipType = ownership
        return entry
    }

    static func ownership(_ h: Harness, _ transaction: String) throws -> String? {
        try h.scalar(
            "SELECT coalesce(in_app_ownership_type, 'NULL') FROM receipt_transactions WHERE transaction_id = $1",
            [transaction]
        )
    }

    @Test("grant (the default): shared purchases are credited, and the ledger and entitlements say whose they are")
    func grant() throws {
        let h = try Self.harness()
        let jobs = try [
            SignedTransactionTests.enqueue(h, try Self.jws("2000000000003001", ownership: "FAMILY_SHARED"),
                                           order: "o-1", user: "member", product: "lifetime"),
            SignedTransactionTests.enqueue(h, try Self.jws("2000000000003002", ownership: "PURCHASED"),
                                           order: "o-2", user: "buyer", product: "lifetime"),
            h.enqueue(Harness.receipt(purchases: [Self.receiptEntry("1000000000003003", ownership: "FAMILY_SHARED")]),
                      order: "o-3", user: "receipt-member", product: "lifetime"),
            h.enqueue(Harness.receipt(purchases: [Self.receiptEntry("1000000000003004", ownership: nil)]),
                      order: "o-4", user: "old-receipt", product: "lifetime"),
        ]
        try h.drain()
        #expect(try jobs.map { try LedgerSecurityTests.verdict(h, $0) } == Array(repeating: "verified", count: 4))
        #expect(try Self.ownership(h, "2000000000003001") == "FAMILY_SHARED")
        #expect(try Self.ownership(h, "2000000000003002") == "PURCHASED")
        #expect(try Self.ownership(h, "1000000000003003") == "FAMILY_SHARED")
        #expect(try Self.ownership(h, "1000000000003004") == "NULL")
        #expect(try h.scalar("SELECT in_app_ownership_type FROM receipt_entitlements WHERE user_id = 'member'")
            == "FAMILY_SHARED")
        #expect(try h.scalar("SELECT in_app_ownership_type FROM receipt_entitlements WHERE user_id = 'buyer'")
            == "PURCHASED")
    }

    @Test("reject: a shared purchase (signed transaction or receipt) is rejected family_shared; bought ones are credited")
    func reject() throws {
        let h = try Self.harness()
        let shared = try SignedTransactionTests.enqueue(
            h, try Self.jws("2000000000003101", ownership: "FAMILY_SHARED"), order: "o-1", user: "member",
            product: "lifetime"
        )
        let bought = try SignedTransactionTests.enqueue(
            h, try Self.jws("2000000000003102", ownership: "PURCHASED"), order: "o-2", user: "buyer",
            product: "lifetime"
        )
        let sharedReceipt = try h.enqueue(
            Harness.receipt(purchases: [Self.receiptEntry("1000000000003103", ownership: "FAMILY_SHARED")]),
            order: "o-3", user: "receipt-member", product: "lifetime"
        )
        try h.drain { $0.rules.familySharing = .reject }
        #expect(try LedgerSecurityTests.verdict(h, shared) == "rejected:family_shared")
        #expect(try h.job(shared)["last_error"]?.contains("FAMILY_SHARING=reject") == true)
        #expect(try LedgerSecurityTests.verdict(h, bought) == "verified")
        #expect(try LedgerSecurityTests.verdict(h, sharedReceipt) == "rejected:family_shared")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE in_app_ownership_type = 'FAMILY_SHARED'")
            == "0")
    }
}
