import AppStoreSignedData
import AppleFixtureFiles
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// StoreKit 2 signed transactions through the queue, the workers, the rules and the ledger, with JWS signed at test
/// time by an App Store-shaped chain whose root the workers trust.
@Suite("Signed transactions end to end", .serialized, .ownThread)
struct SignedTransactionTests {
    struct Payload {
        var transactionId: String
        var originalTransactionId: String?
        var productId = "pro.monthly"
        var bundleId = "com.example.app"
        var environment = "Production"
        var appAccountToken: String?
        var revokedAtMs: Int64?
        var expiresInMs: Int64?

        func json() throws -> Data {
            var object: [String: Any] = [
                "transactionId": transactionId, "originalTransactionId": originalTransactionId ?? transactionId,
                "bundleId": bundleId, "productId": productId, "environment": environment, "quantity": 1,
                "purchaseDate": Harness.now - 60_000, "signedDate": Harness.now, "type": "Consumable",
                "inAppOwnershipType": "PURCHASED", "transactionReason": "PURCHASE", "storefront": "USA",
                "storefrontId": "143441",
            ]
            if let appAccountToken { object["appAccountToken"] = appAccountToken }
            if let revokedAtMs { object["revocationDate"] = revokedAtMs; object["revocationReason"] = 0 }
            if let expiresInMs { object["expiresDate"] = Harness.now + expiresInMs }
            return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        }
    }

    static func sign(_ payload: Payload, by signer: JWSSigner? = nil) throws -> String {
        try (signer ?? Harness.signer.get()).sign(try payload.json())
    }

    static func enqueue(
        _ h: Harness, _ jws: String, order: String, user: String = "user-1", product: String = "pro.monthly",
        transaction: String? = nil, token: String? = nil
    ) throws -> Int64 {
        let rows = try h.db.query(
            """
            SELECT enqueue_transaction(signed_transaction => $1, transaction_id => $2, order_id => $3, user_id => $4,
                                       product_id => $5, bundle_id => 'com.example.app',
                                       app_account_token => $6::uuid) AS id
            """,
            [jws, transaction, order, user, product, token]
        )
        return try #require(rows.int64(0, "id"))
    }

    @Test("a signed transaction is verified and credited; its result and the ledger name it")
    func verified() throws {
        let h = try Harness()
        let id = try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000001")), order: "o-1")
        try h.drain()
        let job = try h.job(id)
        #expect(job["state"] == "verified", "\(job)")
        #expect(job["environment"] == "Production")
        #expect(job["apple_status"] == "")
        #expect(job["result"]?.contains(#""credit_key": "2000000000000001""#) == true, "\(job)")
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_transactions WHERE transaction_id = '2000000000000001' AND job_id = $1",
            [String(id)]
        ) == "1")
    }

    @Test("each way a signed transaction can fail has its own reason", .needsAppleFixtures)
    func rejections() throws {
        let h = try Harness()
        let tokenA = "0b7b2f5e-62f4-4c8e-9d3c-5e1c2a7d9f10"
        let tokenB = "9c0e5a1d-7b2f-4e3c-8d1a-2f6b5c4d3e2a"
        let foreign = try JWSSigner(chain: SigningChain())
        let genuine = try Self.sign(Payload(transactionId: "2000000000000010"))
        let parts = genuine.split(separator: ".").map(String.init)
        var tamperedPayload = try JSONSerialization.jsonObject(with: try Payload(transactionId: "2000000000000010").json())
            as! [String: Any]
        tamperedPayload["productId"] = "pro.yearly"
        let tampered = parts[0] + "." + JWSSigner.base64URL(try JSONSerialization.data(withJSONObject: tamperedPayload))
            + "." + parts[2]
        let xcode = try TestServer.fixture("appstoreserverlibrary-xcode-signed-transaction.jws")
        let cases: [(order: String, id: Int64, state: String, reason: String)] = [
            ("wrong-product", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000011")),
                                               order: "wrong-product", product: "pro.yearly"), "rejected",
             "product_mismatch"),
            ("forged", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000012"), by: foreign),
                                        order: "forged"), "rejected", "invalid_signature"),
            ("tampered", try Self.enqueue(h, tampered, order: "tampered", product: "pro.yearly"), "rejected",
             "invalid_signature"),
            ("xcode", try Self.enqueue(h, xcode, order: "xcode", product: "pass.premium"), "rejected",
             "invalid_signature"),
            ("other-app", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000013",
                                                                   bundleId: "com.example.other")),
                                           order: "other-app"), "rejected", "bundle_mismatch"),
            ("refunded", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000014",
                                                                  revokedAtMs: Harness.now - 1000)),
                                          order: "refunded"), "rejected", "refunded"),
            ("account", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000015",
                                                                 appAccountToken: tokenB)),
                                         order: "account", token: tokenA), "rejected", "account_mismatch"),
            ("account-ok", try Self.enqueue(h, try Self.sign(Payload(transactionId: "2000000000000016",
                                                                    appAccountToken: tokenA)),
                                            order: "account-ok", token: tokenA), "verified", ""),
            ("other-transaction", try Self.enqueue(h, genuine, order: "other-transaction",
                                                   transaction: "2000000000000099"), "rejected",
             "transaction_not_found"),
        ]
        try h.drain()
        for item in cases {
            let job = try h.job(item.id)
            #expect(job["state"] == item.state, "\(item.order): \(job)")
            #expect(job["reason"] == item.reason, "\(item.order): \(job)")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    @Test("replays: the same signed transaction again is already_credited, whoever sends it; the next one of a chain another user owns is owned_by_other_user")
    func replay() throws {
        let h = try Harness()
        let jws = try Self.sign(Payload(transactionId: "2000000000000020"))
        let first = try Self.enqueue(h, jws, order: "first", user: "alice")
        try h.drain()
        #expect(try h.job(first)["state"] == "verified")
        let again = try Self.enqueue(h, jws, order: "again", user: "alice")
        let stolen = try Self.enqueue(h, jws, order: "stolen", user: "mallory")
        let renewal = try Self.sign(Payload(transactionId: "2000000000000021", originalTransactionId: "2000000000000020"))
        let chain = try Self.enqueue(h, renewal, order: "chain", user: "mallory")
        try h.drain()
        #expect(try h.job(again)["reason"] == "already_credited")
        #expect(try h.job(stolen)["reason"] == "already_credited")
        #expect(try h.job(chain)["reason"] == "owned_by_other_user")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
    }

    @Test("one purchase verified once by receipt and once by signed transaction is credited once")
    func receiptAndSignedTransaction() throws {
        let h = try Harness()
        let receipt = Harness.receipt(purchases: [Harness.purchase("2000000000000030")])
        let byReceipt = try h.enqueue(receipt, order: "by-receipt", user: "bob")
        try h.drain()
        #expect(try h.job(byReceipt)["state"] == "verified")
        let bySigned = try Self.enqueue(
            h, try Self.sign(Payload(transactionId: "2000000000000030")), order: "by-signed", user: "bob"
        )
        try h.drain()
        let job = try h.job(bySigned)
        #expect(job["state"] == "rejected" && job["reason"] == "already_credited", "\(job)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE transaction_id = '2000000000000030'") == "1")
    }

    @Test("a sandbox signed transaction follows SANDBOX_POLICY")
    func sandbox() throws {
        let h = try Harness()
        let accepted = try Self.enqueue(
            h, try Self.sign(Payload(transactionId: "2000000000000040", environment: "Sandbox")), order: "sandbox-1"
        )
        try h.drain()
        #expect(try h.job(accepted)["environment"] == "Sandbox")
        #expect(try h.job(accepted)["state"] == "verified")
        let refused = try Self.enqueue(
            h, try Self.sign(Payload(transactionId: "2000000000000041", environment: "Sandbox")), order: "sandbox-2"
        )
        try h.drain { $0.rules.sandboxPolicy = .reject }
        #expect(try h.job(refused)["reason"] == "sandbox_not_allowed")
    }
}
