import AppReceipt
import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
import ThreadSupport

/// Issue 37, lost orders: a purchase Apple announces reaches its customer whether or not the app ever sends it,
/// through the token the app gave StoreKit (register_account_token, expect_purchase), or support's claim; and
/// whatever arrives first, it is credited once. Signed at test time, through the workers, real PostgreSQL.
@Suite("Lost orders: purchases Apple announces", .serialized, .ownThread)
struct LostOrderTests {
    static let alice = "5b0a2f3e-6a3c-4c1b-9a57-6f3d2b8e9c01"
    static let unknown = "0f6f8d1c-2b7e-4d7a-8d3c-1a2b3c4d5e6f"

    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        return h
    }

    /// A ONE_TIME_CHARGE of a consumable, as Apple signs it.
    static func charge(_ transactionId: String, token: String?, product: String = "coins.100") throws -> String {
        var transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": "com.example.app",
            "productId": product, "purchaseDate": Harness.now - 60_000, "quantity": 1, "type": "Consumable",
            "price": 990, "currency": "USD", "storefront": "USA",
        ]
        transaction["appAccountToken"] = token
        return try NotificationTests.Note(type: "ONE_TIME_CHARGE", transaction: transaction).signed()
    }

    static func apply(_ h: Harness, _ payload: String) throws -> String? {
        let id = try NotificationTests.receive(h, payload)
        try h.drain()
        return try NotificationTests.state(h, id)
    }

    static func ledger(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT transaction_id || ' ' || user_id || ' ' || coalesce(order_id, '-') FROM receipt_transactions ORDER BY id"
        ).rows.map { $0[0] ?? "" }
    }

    static func sqlState(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as PostgresError {
            return error.sqlState
        } catch {
            return "\(error)"
        }
    }

    @Test("a charge with a registered token and no job: credited once to the token's customer as order apple:<id>")
    func announcedToRegisteredToken() throws {
        let h = try Self.harness()
        #expect(try h.scalar("SELECT register_account_token('alice', $1)", [Self.alice]) == "0")
        let charge = try Self.charge("3000000000000101", token: Self.alice)
        #expect(try Self.apply(h, charge) == "applied")
        #expect(try Self.ledger(h) == ["3000000000000101 alice apple:3000000000000101"])
        let job = try h.db.query(
            "SELECT state, kind, user_id, result->>'source', result->'credited'->>'transaction_id', finished_at IS NOT NULL "
                + "FROM receipt_jobs"
        ).rows
        #expect(job.map { $0.map { $0 ?? "" } } == [["verified", "announced", "alice", "notification", "3000000000000101", "t"]])
        #expect(try NotificationTests.events(h) == ["credited alice apple:3000000000000101"])
        // Apple's retry of the same notification (the same row), and another notification of the same purchase.
        #expect(try Self.apply(h, charge) == "applied")
        #expect(try Self.apply(h, try Self.charge("3000000000000101", token: Self.alice)) == "applied")
        #expect(try Self.ledger(h).count == 1)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
    }

    @Test("an expected order is verified by its purchase's notification; the same call returns the same job")
    func expectedOrderVerified() throws {
        let h = try Self.harness()
        let id = try #require(
            try h.scalar("SELECT expect_purchase('o-1', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice])
        )
        #expect(try h.scalar("SELECT expect_purchase('o-1', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice]) == id)
        #expect(try h.scalar("SELECT state || ' ' || kind || ' ' || (run_at > now() + interval '71 hours')::text FROM receipt_jobs") == "queued expected true")
        #expect(try h.scalar("SELECT jobs FROM receipt_queue_summary WHERE state = 'expected'") == "1")
        #expect(try h.scalar("SELECT jobs FROM receipt_queue_summary WHERE state = 'queued'") == "0")
        // Another product's charge with the same token does not complete it.
        #expect(try Self.apply(h, try Self.charge("3000000000000201", token: Self.alice, product: "coins.500")) == "applied")
        #expect(try h.job(Int64(id)!)["state"] == "queued")
        #expect(try Self.apply(h, try Self.charge("3000000000000202", token: Self.alice)) == "applied")
        let job = try h.job(Int64(id)!)
        #expect(job["state"] == "verified", "\(job)")
        #expect(try Self.ledger(h) == [
            "3000000000000201 alice apple:3000000000000201", "3000000000000202 alice o-1",
        ])
    }

    @Test("an expected order nobody paid for is rejected not_purchased at its deadline, by the sweep")
    func expectedOrderExpires() throws {
        let h = try Self.harness()
        let id = try #require(
            try h.scalar("SELECT expect_purchase('o-2', 'alice', 'coins.100', $1, 'com.example.app', interval '1 minute')", [Self.alice])
        )
        _ = try h.db.query("SELECT * FROM receipt_sweep(5)")
        #expect(try h.job(Int64(id)!)["state"] == "queued", "not before its deadline")
        _ = try h.db.query("UPDATE receipt_jobs SET run_at = now() - interval '1 second' WHERE id = $1", [id])
        // A worker never claims it, even when due.
        try h.drain()
        #expect(try h.job(Int64(id)!)["attempts"] == "0")
        _ = try h.db.query("SELECT * FROM receipt_sweep(5)")
        let job = try h.job(Int64(id)!)
        #expect(job["state"] == "rejected", "\(job)")
        #expect(job["reason"] == "not_purchased", "\(job)")
        #expect(job["finished"] == "true")
    }

    @Test("a purchase with an unknown token waits in receipt_unclaimed_purchases until its token is registered")
    func unclaimedThenRegistered() throws {
        let h = try Self.harness()
        #expect(try Self.apply(h, try Self.charge("3000000000000301", token: Self.unknown)) == "applied")
        #expect(try Self.ledger(h).isEmpty)
        #expect(
            try h.scalar("SELECT transaction_id || ' ' || app_account_token || ' ' || price || ' ' || source FROM receipt_unclaimed_purchases")
                == "3000000000000301 \(Self.unknown) 0.990 notification"
        )
        #expect(try h.scalar("SELECT register_account_token('bob', $1)", [Self.unknown]) == "1")
        #expect(try Self.ledger(h) == ["3000000000000301 bob apple:3000000000000301"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "0")
        #expect(try h.scalar("SELECT reason FROM receipt_events WHERE kind = 'credited'") == "token")
    }

    @Test("a purchase without a token is claimed by support for a customer; a second claim is refused, nothing changed")
    func claimedBySupport() throws {
        let h = try Self.harness()
        #expect(try Self.apply(h, try Self.charge("3000000000000401", token: nil)) == "applied")
        let job = try #require(try h.scalar("SELECT claim_purchase('3000000000000401', 'carol', 'ticket-7')"))
        #expect(try h.job(Int64(job)!)["state"] == "verified")
        #expect(try Self.ledger(h) == ["3000000000000401 carol ticket-7"])
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase('3000000000000401', 'dave')") } == "RW409")
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase('3999999999999999', 'dave')") } == "P0002")
        #expect(try Self.ledger(h).count == 1)
    }

    @Test("bad input: another customer's token, an unknown bundle, a deadline out of range, an order id of another product")
    func badInput() throws {
        let h = try Self.harness()
        _ = try h.db.query("SELECT register_account_token('alice', $1)", [Self.alice])
        #expect(Self.sqlState { _ = try h.db.query("SELECT register_account_token('mallory', $1)", [Self.alice]) } == "RW409")
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT register_account_token('alice', $1, 'com.other.app')", [Self.unknown])
        } == "22023")
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.100', $1, 'com.example.app', interval '1 second')", [Self.alice])
        } == "22023")
        _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice])
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('o-3', 'alice', 'coins.500', $1, 'com.example.app')", [Self.alice])
        } == "RW409")
        #expect(try h.scalar("SELECT user_id FROM receipt_account_tokens WHERE app_account_token = $1", [Self.alice]) == "alice")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
    }
    @Test("a subscription Apple announces: the first period credits the chain to the token's customer, renewals follow it")
    func announcedSubscription() throws {
        let h = try Self.harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        _ = try h.db.query("SELECT register_account_token('alice', $1)", [Self.alice])
        let start = Harness.now - 60_000
        var first = NotificationTests.period("2000000000000000", wol: "wol-1", start: start)
        first["appAccountToken"] = Self.alice
        #expect(try Self.apply(h, try NotificationTests.Note(type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: first).signed()) == "applied")
        #expect(try h.scalar("SELECT user_id FROM receipt_purchase_owners WHERE original_transaction_id = '2000000000000000'") == "alice")
        // The renewal carries the token too, but the chain has its owner now: credited to it, with no order.
        var second = NotificationTests.period("2000000000000001", wol: "wol-2", start: start + 30 * 86_400_000)
        second["appAccountToken"] = Self.alice
        #expect(try Self.apply(h, try NotificationTests.Note(type: "DID_RENEW", transaction: second).signed()) == "applied")
        #expect(try Self.ledger(h) == ["2000000000000000 alice apple:2000000000000000", "2000000000000001 alice -"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "1")
    }

    @Test("a family member's shared copy is never credited by its token; SANDBOX_POLICY=allowlist holds; support claims")
    func workerRules() throws {
        let h = try Self.harness()
        _ = try h.db.query("SELECT register_account_token('alice', $1)", [Self.alice])
        var shared: [String: Any] = [
            "transactionId": "3000000000000601", "originalTransactionId": "3000000000000601",
            "bundleId": "com.example.app", "productId": "coins.100", "purchaseDate": Harness.now - 60_000,
            "quantity": 1, "type": "Consumable", "inAppOwnershipType": "FAMILY_SHARED", "appAccountToken": Self.alice,
        ]
        let id = try NotificationTests.receive(h, try NotificationTests.Note(type: "ONE_TIME_CHARGE", transaction: shared).signed())
        try h.drain()
        #expect(try NotificationTests.state(h, id) == "applied")
        #expect(try h.scalar("SELECT note FROM receipt_unclaimed_purchases")?.contains("family member") == true)
        // A sandbox purchase of a user the allowlist does not name: kept; registering the token again keeps it too.
        shared["transactionId"] = "3000000000000602"
        shared["originalTransactionId"] = "3000000000000602"
        shared["inAppOwnershipType"] = "PURCHASED"
        let sandbox = try NotificationTests.receive(
            h, try NotificationTests.Note(type: "ONE_TIME_CHARGE", environment: "Sandbox", transaction: shared).signed()
        )
        try h.drain { $0.rules.sandboxPolicy = .allowlist(["reviewer"]) }
        #expect(try NotificationTests.state(h, sandbox) == "applied")
        #expect(try h.scalar("SELECT register_account_token('alice', $1)", [Self.alice]) == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "2")
        #expect(try Self.ledger(h).isEmpty)
        // Support's claim decides for itself, but only for the token's own customer.
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase('3000000000000602', 'mallory')") } == "RW409")
        _ = try h.db.query("SELECT claim_purchase('3000000000000602', 'alice')")
        #expect(try Self.ledger(h) == ["3000000000000602 alice apple:3000000000000602"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "1")
    }

    @Test("a non-renewing subscription Apple announces gets its stacked period, as the app's copy would")
    func announcedNonRenewing() throws {
        let h = try Self.harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind, duration) VALUES ('pass.30', 'non_renewing', interval '30 days')")
        _ = try h.db.query("SELECT register_account_token('alice', $1)", [Self.alice])
        for transaction in ["3000000000000701", "3000000000000702"] {
            #expect(try Self.apply(h, try Self.charge(transaction, token: Self.alice, product: "pass.30")) == "applied")
        }
        // Each period 30 days; the second starts when the first ends.
        let days = try h.db.query(
            "SELECT round(extract(epoch FROM expires_date - purchase_date) / 86400) FROM receipt_transactions ORDER BY id"
        ).rows.map { $0[0] ?? "" }
        #expect(days == ["30", "60"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_entitlements WHERE user_id = 'alice'") == "1")
    }

    @Test("an old purchase does not complete a new order; a late app copy of an order id apple:… is refused")
    func ordersAndDates() throws {
        let h = try Self.harness()
        // A purchase with alice's token, kept unclaimed, made a day before the order alice opens now.
        var old: [String: Any] = [
            "transactionId": "3000000000000801", "originalTransactionId": "3000000000000801",
            "bundleId": "com.example.app", "productId": "coins.100", "purchaseDate": Harness.now - 86_400_000,
            "quantity": 1, "type": "Consumable", "appAccountToken": Self.alice,
        ]
        #expect(try Self.apply(h, try NotificationTests.Note(type: "ONE_TIME_CHARGE", transaction: old).signed()) == "applied")
        let order = try #require(
            try h.scalar("SELECT expect_purchase('o-8', 'alice', 'coins.100', $1, 'com.example.app')", [Self.alice])
        )
        #expect(try h.job(Int64(order)!)["state"] == "queued", "the old purchase is not this order's")
        #expect(try Self.ledger(h) == ["3000000000000801 alice apple:3000000000000801"])
        old["transactionId"] = "3000000000000802"
        old["originalTransactionId"] = "3000000000000802"
        old["purchaseDate"] = Harness.now
        #expect(try Self.apply(h, try NotificationTests.Note(type: "ONE_TIME_CHARGE", transaction: old).signed()) == "applied")
        #expect(try h.job(Int64(order)!)["state"] == "verified")
        // The service's own order ids cannot be taken by the API layer.
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('apple:3000000000000803', 'mallory', 'coins.100', $1, 'com.example.app')", [Self.unknown])
        } == "22023")
        #expect(Self.sqlState {
            _ = try h.db.query(
                "SELECT enqueue_transaction(transaction_id => '3000000000000803', order_id => 'apple:3000000000000803', "
                    + "user_id => 'mallory', product_id => 'coins.100', bundle_id => 'com.example.app')"
            )
        } == "22023")
    }

    @Test("a purchase the app's own copy credited leaves receipt_unclaimed_purchases")
    func creditedByTheApp() throws {
        let h = try Self.harness()
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100")])
        let transaction = try #require(added.first?.transactionId)
        #expect(try Self.apply(h, try Self.charge(transaction, token: nil)) == "applied")
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "1")
        _ = try h.store.enqueueTransaction(
            signedTransaction: nil, transactionId: transaction, orderId: "o-10", userId: "erin", productId: "coins.100",
            bundleId: "com.example.app", appAccountToken: nil
        )
        try h.drain(serverAPI: true)
        #expect(try Self.ledger(h) == ["\(transaction) erin o-10"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed_purchases") == "0")
        #expect(Self.sqlState { _ = try h.db.query("SELECT claim_purchase($1, 'erin')", [transaction]) } == "RW409")
    }

    @Test("a malformed token is refused by its type, nothing changed")
    func malformedToken() throws {
        let h = try Self.harness()
        #expect(Self.sqlState { _ = try h.db.query("SELECT register_account_token('alice', 'not-a-uuid')") } == "22P02")
        #expect(Self.sqlState {
            _ = try h.db.query("SELECT expect_purchase('o-9', 'alice', 'coins.100', 'nope', 'com.example.app')")
        } == "22P02")
        #expect(try h.scalar("SELECT count(*) FROM receipt_account_tokens") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0")
    }

    @Test("purchases Apple's history shows beside an order: one whose token was registered before is credited once")
    func seenBesideAnOrder() throws {
        let h = try Self.harness()
        let bob = "7c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e5"
        // Alice's order for the coins she is paying for now, her lost purchase of a minute before (the app died
        // before sending it), an expected order it completes; Bob's purchase of an hour before his token was
        // registered; a purchase with a token nobody registered; Alice's purchase of 40 days ago.
        _ = try h.db.query(
            "SELECT expect_purchase('exp-1', 'alice', 'coins.100', $1::uuid, 'com.example.app')", [Self.alice]
        )
        _ = try h.db.query("SELECT register_account_token('bob', $1::uuid)", [bob])
        let added = try h.fake.purchases.add([
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "apple-1",
                appAccountToken: Self.alice, purchaseDate: Harness.now - 30_000
            ),
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "apple-1",
                appAccountToken: Self.alice, purchaseDate: Harness.now - 60_000
            ),
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "apple-1",
                appAccountToken: bob, purchaseDate: Harness.now - 3_600_000
            ),
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "apple-1",
                appAccountToken: Self.unknown, purchaseDate: Harness.now - 90_000
            ),
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "apple-1",
                appAccountToken: Self.alice, purchaseDate: Harness.now - 40 * 86_400_000
            ),
        ])
        let (paid, lost) = (added[0].transactionId, added[1].transactionId)
        let signer = ReceiptSigner(chain: try ReceiptSignatureAttackTests.appStoreChain.get())
        let trusted = ReceiptSignatureVerifier(rootCertificates: [try ReceiptSignatureAttackTests.appStoreChain.get().root])
        var receipt = ReceiptSignatureAttackTests.receipt(paid)
        receipt.purchases[0].productId = "coins.100"
        let order = try h.enqueue(try signer.base64(receipt), order: "o-1", user: "alice", product: "coins.100")
        let drain = {
            try h.drain(serverAPI: true) {
                $0.receiptSource = .serverAPI
                $0.receiptSignature = trusted
            }
        }
        try drain()
        #expect(try h.job(order)["state"] == "verified")
        // The order's own purchase to the order; the lost one to the expected order, by Alice's token; nothing else.
        #expect(try Self.ledger(h) == ["\(paid) alice o-1", "\(lost) alice exp-1"])
        let expected = try h.db.query(
            "SELECT state, result->>'source' FROM receipt_jobs WHERE order_id = 'exp-1'"
        ).rows.map { $0.map { $0 ?? "" } }
        #expect(expected == [["verified", "receipt"]])
        #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'credited' AND reason = 'receipt'") == "1")
        #expect(try h.scalar("SELECT count(*) FROM receipt_unclaimed") == "0", "an answer's purchases are never kept")
        // A purchase of Alice's token without a purchase date (the worker never sends one): not shown to be made after
        // the token's registration, so not credited.
        let undated = try h.db.query(
            "SELECT ledger_id FROM receipt_seen_credit(\(order), 'Production', 'com.example.app', 'receipt', "
                + "'[{\"transaction_id\": \"3000000000000999\", \"product_id\": \"coins.100\", "
                + "\"app_account_token\": \"\(Self.alice)\"}]')"
        ).rows
        #expect(undated == [[nil]])

        // The same answer again (the app's second copy of the order's purchase, under another order id): nothing more.
        let again = try h.enqueue(
            try signer.base64(receipt), order: "o-2", user: "alice", product: "coins.100", transaction: paid
        )
        try drain()
        let second = try h.job(again)
        let ledger = try Self.ledger(h)
        #expect(second["reason"] == "already_credited", "\(second) \(ledger)")
        #expect(try Self.ledger(h).count == 2)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE kind = 'announced'") == "0")
    }

    @Test("200 purchases, each sent by the app and announced by Apple at the same moment, workers running: one credit each")
    func bothWaysAtOnce() throws {
        let h = try Self.harness()
        let count = 200
        let tokens = (0..<count).map { _ in UUID().uuidString.lowercased() }
        let added = try h.fake.purchases.add((0..<count).map { index in
            FakePurchase(
                bundleId: "com.example.app", productId: "coins.100", customerId: "u-\(index)",
                appAccountToken: tokens[index], purchaseDate: Harness.now - 60_000
            )
        })
        for index in 0..<count {
            _ = try h.db.query("SELECT register_account_token($1, $2::uuid)", ["u-\(index)", tokens[index]])
        }
        // Each purchase's two copies, shuffled, sent from four connections while two workers run.
        var sends: [(index: Int, byApple: Bool)] = []
        for index in 0..<count { sends += [(index, true), (index, false)] }
        sends.shuffle()
        let workers = try h.startWorkers(2, serverAPI: true) { $0.drain = false }
        defer { for thread in workers { _ = thread.stop(waitingUpTo: 10) } }
        let failures = ConditionLock<[String]>([])
        let done = ConditionLock(0)
        let databaseURL = h.databaseURL
        let transactions = added.map(\.transactionId)
        for part in 0..<4 {
            let mine = sends.enumerated().filter { $0.offset % 4 == part }.map(\.element)
            try DedicatedThread.detached(name: "sender \(part)") {
                do {
                    let db = try PostgresConnection(databaseURL)
                    for send in mine {
                        let transaction = transactions[send.index]
                        if send.byApple {
                            _ = try NotificationInbox(connection: db).receive(
                                try Self.charge(transaction, token: tokens[send.index]), source: .sql
                            )
                        } else {
                            _ = try db.query(
                                "SELECT enqueue_transaction(transaction_id => $1, order_id => $2, user_id => $3, "
                                    + "product_id => 'coins.100', bundle_id => 'com.example.app')",
                                [transaction, "o-\(send.index)", "u-\(send.index)"]
                            )
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                done.withLock { $0 += 1 }
            }
        }
        #expect(done.wait(until: { $0 == 4 }, timeout: .seconds(120)))
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let settled = try h.waitUntil(180) {
            try h.scalar(
                "SELECT (SELECT count(*) FROM receipt_jobs WHERE finished_at IS NULL) "
                    + "+ (SELECT count(*) FROM receipt_notifications WHERE state NOT IN ('applied', 'duplicate'))"
            ) == "0"
        }
        #expect(settled, "every job final and every notification applied")
        // One credit per purchase, to its own customer.
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == String(count))
        #expect(try h.scalar("SELECT count(DISTINCT transaction_id) FROM receipt_transactions") == String(count))
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_transactions WHERE 'u-' || substr(order_id, 3) <> user_id AND order_id LIKE 'o-%'"
        ) == "0")
        // Each app order verified (credited to it, whichever copy came first) or already_credited when Apple's
        // announcement was applied before the app's order existed; never both, never neither.
        let orders = try h.db.query(
            """
            SELECT j.state, coalesce(j.reason, ''), count(*)
            FROM receipt_jobs j WHERE j.order_id LIKE 'o-%' GROUP BY 1, 2 ORDER BY 1, 2
            """
        ).rows.map { $0.map { $0 ?? "" } }
        let announced = Int(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE kind = 'announced'") ?? "") ?? -1
        let verified = orders.first { $0[0] == "verified" }.flatMap { Int($0[2]) } ?? 0
        let alreadyCredited = orders.first { $0[1] == "already_credited" }.flatMap { Int($0[2]) } ?? 0
        #expect(verified + alreadyCredited == count, "\(orders)")
        #expect(announced == alreadyCredited, "each order of its own stands for an app order that came too late")
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_jobs j WHERE j.state = 'verified' "
                + "AND NOT EXISTS (SELECT 1 FROM receipt_transactions t WHERE t.job_id = j.id)"
        ) == "0", "every verified job has its credit")
        print("both ways at once: \(verified) app orders verified, \(alreadyCredited) credited first by Apple's word")
    }
}
