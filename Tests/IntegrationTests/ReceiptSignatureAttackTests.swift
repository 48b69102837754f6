import AppReceipt
import AppStoreSignedData
import FakeAppStore
import Foundation
import Testing

/// Issue 22, attack 8, end to end: with `RECEIPT_SOURCE=api` a receipt's transaction id picks whose Transaction
/// History is credited, so a receipt Apple did not sign must never be read. And `APPSTORE_REQUIRE_ACCOUNT_TOKEN`:
/// a bare transaction id proves the purchase exists for the app, not whose it is.
@Suite("Attack 8: receipts through the App Store Server API must be signed by Apple", .serialized, .ownThread)
struct ReceiptSignatureAttackTests {
    /// The fake App Store's receipt signing chain (RSA, Apple's shape), and an attacker's look-alike; made once.
    static let appStoreChain = Result { try ReceiptSigningChain() }
    static let attackerChain = Result { try ReceiptSigningChain() }

    /// A receipt as an app holds one: `transactionId` its purchase, created a minute ago.
    static func receipt(_ transactionId: String) -> AppReceipt {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return AppReceipt(
            environment: "Production", bundleId: "com.example.app", applicationVersion: "1", creationDate: now - 60_000,
            purchases: [
                AppReceiptPurchase(
                    quantity: 1, productId: "pro.monthly", transactionId: transactionId,
                    originalTransactionId: transactionId, purchaseDate: now - 120_000
                ),
            ]
        )
    }

    @Test("made-up receipts naming the victim's transaction are invalid_receipt and credit nothing; genuine ones verify")
    func forgedReceipts() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", customerId: "victim"),
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", customerId: "attacker"),
        ])
        let victim = added[0].transactionId
        let attacker = added[1].transactionId
        let appStore = ReceiptSigner(chain: try Self.appStoreChain.get())
        let trusted = ReceiptSignatureVerifier(rootCertificates: [try Self.appStoreChain.get().root])
        try #require(victim.utf8.count == attacker.utf8.count)

        // 1. Signed by a chain that copies Apple's names and OIDs but not its root.
        let resigned = try ReceiptSigner(chain: try Self.attackerChain.get()).base64(Self.receipt(victim))
        // 2. The App Store's own certificates, but a signature nobody made (the content is the attacker's).
        var unsigned = try appStore.pkcs7(Self.receipt(attacker))
        let attackerId = try #require(unsigned.firstRange(of: Array(attacker.utf8)))
        unsigned.replaceSubrange(attackerId, with: Array(victim.utf8))
        // 3. A genuine receipt of the attacker's own purchase, and the victim's genuine one.
        let genuine = try appStore.base64(Self.receipt(attacker))
        let victims = try appStore.base64(Self.receipt(victim))

        let forged = [
            try h.enqueue(resigned, order: "forged-1", user: "attacker"),
            try h.enqueue(Data(unsigned).base64EncodedString(), order: "forged-2", user: "attacker"),
        ]
        try h.drain(serverAPI: true) {
            $0.receiptSource = .serverAPI
            $0.receiptSignature = trusted
        }
        for id in forged {
            let job = try h.job(id)
            #expect(job["state"] == "rejected", "\(job)")
            #expect(job["reason"] == "invalid_receipt", "\(job)")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_purchase_owners") == "0")
        #expect(h.fake.apiStats().requests.values.reduce(0, +) == 0, "Apple was not asked about a forged receipt")

        let own = try h.enqueue(genuine, order: "genuine", user: "attacker")
        let victimsOwn = try h.enqueue(victims, order: "victims", user: "victim")
        var nothingBought = Self.receipt(attacker)
        nothingBought.purchases = []
        let empty = try h.enqueue(try appStore.base64(nothingBought), order: "empty", user: "attacker")
        try h.drain(serverAPI: true) {
            $0.receiptSource = .serverAPI
            $0.receiptSignature = trusted
        }
        for id in [own, victimsOwn] {
            let job = try h.job(id)
            #expect(job["state"] == "verified", "\(job)")
        }
        let emptyJob = try h.job(empty)
        #expect(emptyJob["reason"] == "no_purchases", "a genuine receipt with no purchases: nothing to ask Apple")
        #expect(
            try h.scalar("SELECT user_id FROM receipt_transactions WHERE transaction_id = $1", [victim]) == "victim"
        )
        #expect(
            try h.scalar("SELECT user_id FROM receipt_transactions WHERE transaction_id = $1", [attacker]) == "attacker"
        )
    }

    @Test("issue 36, attack 1: a receipt carrying 72 cross-signed CAs is invalid_receipt at once; the jobs after it verify")
    func loopOfCertificates() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", customerId: "victim"),
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", customerId: "buyer"),
        ])
        let loop = try CrossSignedLoop(size: 9)
        let attack = try h.enqueue(
            try loop.receiptSigner.base64(Self.receipt(added[0].transactionId)), order: "loop", user: "attacker"
        )
        let genuine = try h.enqueue(
            try ReceiptSigner(chain: try Self.appStoreChain.get()).base64(Self.receipt(added[1].transactionId)),
            order: "after-the-loop", user: "buyer"
        )
        let trusted = ReceiptSignatureVerifier(rootCertificates: [try Self.appStoreChain.get().root])
        let started = ContinuousClock.now
        try h.drain(serverAPI: true) {
            $0.receiptSource = .serverAPI
            $0.receiptSignature = trusted
        }
        let drained = ContinuousClock.now - started
        let refused = try h.job(attack)
        #expect(refused["state"] == "rejected", "\(refused)")
        #expect(refused["reason"] == "invalid_receipt", "\(refused)")
        #expect(refused["attempts"] == "1", "decided on the first claim, never retried: \(refused)")
        #expect(refused["last_error"]?.contains("73 certificates") == true, "\(refused)")
        let verified = try h.job(genuine)
        #expect(verified["state"] == "verified", "\(verified)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE user_id = 'attacker'") == "0")
        print("a K = 9 loop receipt and a genuine one drained in \(drained)")
    }

    @Test("the production default trusts Apple Root CA only: the fake's genuine receipt is invalid_receipt there")
    func productionDefault() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "pro.monthly")])
        let receipt = try ReceiptSigner(chain: try Self.appStoreChain.get()).base64(Self.receipt(added[0].transactionId))
        let id = try h.enqueue(receipt, order: "default")
        try h.drain(serverAPI: true) { $0.receiptSource = .serverAPI }
        let job = try h.job(id)
        #expect(job["reason"] == "invalid_receipt", "\(job)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
    }

    @Test("APPSTORE_REQUIRE_ACCOUNT_TOKEN: a bare transaction id needs the transaction's own appAccountToken")
    func requireAccountToken() throws {
        let h = try Harness()
        let token = UUID().uuidString.lowercased()
        let added = try h.fake.purchases.add([
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", appAccountToken: token),
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly"),
            FakePurchase(bundleId: "com.example.app", productId: "pro.monthly", appAccountToken: token),
        ])
        func enqueue(_ transaction: String, _ order: String, token: String?) throws -> Int64 {
            try h.store.enqueueTransaction(
                signedTransaction: nil, transactionId: transaction, orderId: order, userId: "u-\(order)",
                productId: "pro.monthly", bundleId: "com.example.app", appAccountToken: token
            )
        }
        let noToken = try enqueue(added[0].transactionId, "no-token", token: nil)
        let wrongToken = try enqueue(added[0].transactionId, "wrong-token", token: UUID().uuidString.lowercased())
        let untokened = try enqueue(added[1].transactionId, "untokened", token: token)
        let matching = try enqueue(added[2].transactionId, "matching", token: token.uppercased())
        try h.drain(serverAPI: true) { $0.requireAccountToken = true }
        for id in [noToken, wrongToken, untokened] {
            let job = try h.job(id)
            #expect(job["reason"] == "account_mismatch", "\(job)")
        }
        let matched = try h.job(matching)
        #expect(matched["state"] == "verified", "\(matched)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")

        // Off (the default): a bare id is credited as before.
        let bare = try enqueue(added[1].transactionId, "bare", token: nil)
        try h.drain(serverAPI: true)
        let bareJob = try h.job(bare)
        #expect(bareJob["state"] == "verified", "\(bareJob)")
    }
}
