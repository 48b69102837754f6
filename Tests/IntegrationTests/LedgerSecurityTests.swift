import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
import ThreadSupport

/// What the ledger knows of revocations is consulted when it credits (docs/architecture.md, rule 14), and the ledger's
/// other promises that only a test against a real PostgreSQL shows: the StoreKit 2 credit key with a catalog,
/// DID_RENEW of a period credited before, NOTIFY receipt_revocations from a notification.
///
/// The attack (issue 22, attack 6): Apple refunds a purchase, its REFUND notification is applied here before the
/// purchase was ever credited, and then the app sends the copy it kept from before the refund (a signed transaction,
/// verified offline, or a receipt whose answer does not show the refund). That copy is genuine; it must be `refunded`.
@Suite("Ledger security: revocations known before the credit, credit keys, renewals", .serialized, .ownThread)
struct LedgerSecurityTests {
    typealias Note = NotificationTests.Note

    /// A harness whose app has its Apple ID and whose catalog knows the products used here.
    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        _ = try h.db.query(
            """
            INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable'),
                ('coins.100', 'consumable'), ('lifetime', 'non_consumable')
            """
        )
        return h
    }

    /// A StoreKit 2 transaction payload (before signing), bought `agoMs` before the test process started.
    static func transaction(
        _ id: String, original: String? = nil, product: String = "coins.100", type: String = "Consumable",
        agoMs: Int64 = 60_000, wol: String? = nil, expiresInMs: Int64? = nil, ownership: String = "PURCHASED"
    ) -> [String: Any] {
        var object: [String: Any] = [
            "transactionId": id, "originalTransactionId": original ?? id, "bundleId": "com.example.app",
            "productId": product, "purchaseDate": Harness.now - agoMs, "quantity": 1, "type": type,
            "inAppOwnershipType": ownership, "transactionReason": "PURCHASE",
        ]
        if let wol { object["webOrderLineItemId"] = wol }
        if let expiresInMs { object["expiresDate"] = Harness.now + expiresInMs }
        return object
    }

    /// `transaction` revoked by Apple at `at`.
    static func revoked(_ transaction: [String: Any], at: Int64 = Harness.now - 1000) -> [String: Any] {
        var transaction = transaction
        transaction["revocationDate"] = at
        transaction["revocationReason"] = 0
        return transaction
    }

    /// The JWS the app holds: signed by the trusted test chain, Production.
    static func sign(_ transaction: [String: Any]) throws -> String {
        var transaction = transaction
        transaction["environment"] = "Production"
        transaction["signedDate"] = Harness.now
        return try Harness.signer.get().sign(JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys]))
    }

    static func apply(_ h: Harness, _ note: Note) throws -> Int64 {
        let id = try NotificationTests.receive(h, try note.signed())
        try h.drain()
        #expect(try NotificationTests.state(h, id) == "applied")
        return id
    }

    static func verdict(_ h: Harness, _ id: Int64) throws -> String {
        let job = try h.job(id)
        return [job["state"], job["reason"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
    }

    static func ledger(_ h: Harness, _ transaction: String) throws -> String? {
        try h.scalar(
            "SELECT CASE WHEN revoked_at IS NULL THEN 'credited' ELSE 'revoked' END FROM receipt_transactions "
                + "WHERE transaction_id = $1",
            [transaction]
        )
    }

    // MARK: - Attack 6

    @Test("a REFUND applied before the credit: the pre-refund signed transaction is refunded; REFUND_REVERSED lifts it")
    func refundBeforeSignedTransaction() throws {
        let h = try Self.harness()
        let purchase = Self.transaction("2000000000000700")
        _ = try Self.apply(h, Note(type: "REFUND", signedDate: Harness.now + 1000, transaction: Self.revoked(purchase)))
        #expect(try h.scalar("SELECT action || ' ' || scope FROM receipt_known_revocations") == "revoked transaction")

        let jws = try Self.sign(purchase)
        let job = try SignedTransactionTests.enqueue(h, jws, order: "o-1", product: "coins.100")
        try h.drain()
        #expect(try Self.verdict(h, job) == "rejected:refunded")
        #expect(try h.job(job)["last_error"]?.contains("Apple revoked this purchase") == true)
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_purchase_owners") == "0", "a refunded copy claims no chain")

        // Apple reverses the refund: the same copy, for another order, is credited.
        _ = try Self.apply(h, Note(type: "REFUND_REVERSED", signedDate: Harness.now + 2000, transaction: purchase))
        let again = try SignedTransactionTests.enqueue(h, jws, order: "o-2", product: "coins.100")
        try h.drain()
        #expect(try Self.verdict(h, again) == "verified")
        #expect(try Self.ledger(h, "2000000000000700") == "credited")
    }

    @Test("a REFUND applied before the credit: a receipt that still lists the purchase uncancelled is refunded")
    func refundBeforeReceipt() throws {
        let h = try Self.harness()
        _ = try Self.apply(h, Note(
            type: "REFUND", signedDate: Harness.now + 1000,
            transaction: Self.revoked(Self.transaction("1000000000000700", agoMs: 30_000))
        ))
        let refundedOnly = Harness.receipt(purchases: [Harness.purchase("1000000000000700", product: "coins.100")])
        let job = try h.enqueue(refundedOnly, order: "o-1", product: "coins.100")
        // Two purchases of the product: the refunded one (newer) is passed over for the other.
        let both = Harness.receipt(purchases: [
            Harness.purchase("1000000000000700", product: "coins.100", agoMs: 30_000),
            Harness.purchase("1000000000000701", product: "coins.100", agoMs: 60_000),
        ])
        let second = try h.enqueue(both, order: "o-2", product: "coins.100")
        try h.drain()
        #expect(try Self.verdict(h, job) == "rejected:refunded")
        #expect(try Self.verdict(h, second) == "verified")
        #expect(try Self.ledger(h, "1000000000000700") == nil)
        #expect(try Self.ledger(h, "1000000000000701") == "credited")
        #expect(try h.job(second)["result"]?.contains("1000000000000701") == true)
    }

    @Test("a REFUND of a subscription period: a restore of that period (another transaction id) is refunded too")
    func refundOfPeriod() throws {
        let h = try Self.harness()
        let period = Self.transaction(
            "2000000000000800", original: "2000000000000800", product: "pro.monthly",
            type: "Auto-Renewable Subscription", wol: "7800", expiresInMs: 29 * 86_400_000
        )
        _ = try Self.apply(h, Note(type: "REFUND", signedDate: Harness.now + 1000, transaction: Self.revoked(period)))
        var restore = period
        restore["transactionId"] = "2000000000000801"
        let job = try SignedTransactionTests.enqueue(h, try Self.sign(restore), order: "o-1")
        try h.drain()
        #expect(try Self.verdict(h, job) == "rejected:refunded")
    }

    @Test("REVOKE (Family Sharing) revokes the chain: its credited rows, and copies bought before it; not what comes after")
    func revokeChain() throws {
        let h = try Self.harness()
        func period(_ id: String, wol: String, agoMs: Int64) -> [String: Any] {
            Self.transaction(
                id, original: "2000000000000900", product: "pro.monthly", type: "Auto-Renewable Subscription",
                agoMs: agoMs, wol: wol, expiresInMs: 29 * 86_400_000, ownership: "FAMILY_SHARED"
            )
        }
        let first = try SignedTransactionTests.enqueue(
            h, try Self.sign(period("2000000000000900", wol: "7900", agoMs: 120_000)), order: "o-1"
        )
        try h.drain()
        #expect(try Self.verdict(h, first) == "verified")

        // Apple revokes the member's access, naming another transaction of the chain.
        _ = try Self.apply(h, Note(
            type: "REVOKE", signedDate: Harness.now + 1000,
            transaction: Self.revoked(period("2000000000000901", wol: "7901", agoMs: 60_000), at: Harness.now - 1000)
        ))
        #expect(try Self.ledger(h, "2000000000000900") == "revoked", "the chain's credited row")
        #expect(try h.scalar("SELECT scope FROM receipt_known_revocations") == "chain")

        let before = try SignedTransactionTests.enqueue(
            h, try Self.sign(period("2000000000000902", wol: "7902", agoMs: 30_000)), order: "o-2"
        )
        let after = try SignedTransactionTests.enqueue(
            h, try Self.sign(period("2000000000000903", wol: "7903", agoMs: -5_000)), order: "o-3"
        )
        try h.drain()
        #expect(try Self.verdict(h, before) == "rejected:refunded", "bought before the revocation")
        #expect(try Self.verdict(h, after) == "verified", "bought after it")
    }

    @Test("a credit in flight when the REFUND is applied: the notification waits for it, then revokes it")
    func creditInFlight() throws {
        let h = try Self.harness()
        let purchase = Self.transaction("2000000000000950")
        // A worker's credit, in a transaction not yet committed (receipt_credit() as receipt_complete() calls it).
        let crediting = try PostgresConnection(h.databaseURL)
        defer { crediting.close() }
        _ = try crediting.query("BEGIN")
        let candidate = #"[{"transaction_id": "2000000000000950", "original_transaction_id": "2000000000000950", "#
            + #""product_id": "coins.100", "quantity": 1}]"#
        let credited = try crediting.query(
            """
            SELECT state FROM receipt_credit(ARRAY[ROW(1, 99, 'com.example.app', 'o-1', 'user-1', 'Production',
                                                       $1::jsonb, 0, false)::receipt_credit_request])
            """,
            [candidate]
        )
        #expect(credited.rows.first?.first == "verified")

        let id = try NotificationTests.receive(h, try Note(
            type: "REFUND", signedDate: Harness.now + 1000, transaction: Self.revoked(purchase)
        ).signed())
        let workers = try h.startWorkers(1) { _ in }
        defer { for thread in workers { thread.worker.shutdown(); thread.wait(seconds: 10) } }
        let waiting = try h.waitUntil(30) {
            try h.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == "1"
        }
        #expect(waiting, "the notification waits for the credit in flight")
        Thread.sleep(forTimeInterval: 0.2)
        #expect(try NotificationTests.state(h, id) == "running")
        _ = try crediting.query("COMMIT")
        #expect(workers.allSatisfy { $0.wait(seconds: 60) })
        #expect(try NotificationTests.state(h, id) == "applied")
        #expect(try Self.ledger(h, "2000000000000950") == "revoked")
    }

    // MARK: - Credit keys, renewals, NOTIFY

    @Test("StoreKit 2 credit keys with a catalog: the period for auto-renewables, the chain for non-consumables")
    func creditKeys() throws {
        let h = try Self.harness()
        let period = Self.transaction(
            "2000000000001000", product: "pro.monthly", type: "Auto-Renewable Subscription", wol: "71000",
            expiresInMs: 29 * 86_400_000
        )
        var restoredPeriod = period
        restoredPeriod["transactionId"] = "2000000000001001"
        let owned = Self.transaction("2000000000001010", original: "2000000000001009", product: "lifetime",
                                     type: "Non-Consumable")
        var restoredOwned = owned
        restoredOwned["transactionId"] = "2000000000001011"

        let jobs = try [
            SignedTransactionTests.enqueue(h, try Self.sign(period), order: "o-1"),
            SignedTransactionTests.enqueue(h, try Self.sign(owned), order: "o-3", product: "lifetime"),
        ]
        try h.drain()
        let restores = try [
            SignedTransactionTests.enqueue(h, try Self.sign(restoredPeriod), order: "o-2"),
            SignedTransactionTests.enqueue(h, try Self.sign(restoredOwned), order: "o-4", product: "lifetime"),
        ]
        try h.drain()
        #expect(try jobs.map { try Self.verdict(h, $0) } == ["verified", "verified"])
        #expect(try h.scalar("SELECT credit_key FROM receipt_transactions WHERE transaction_id = '2000000000001000'")
            == "wol:71000")
        #expect(try h.scalar("SELECT credit_key FROM receipt_transactions WHERE transaction_id = '2000000000001010'")
            == "2000000000001009")
        #expect(try restores.map { try Self.verdict(h, $0) } == ["rejected:already_credited", "rejected:already_credited"])
        try Invariants.check(h.db, enqueued: 4)
    }

    @Test("DID_RENEW of a period credited before: applied, no second row, the event says so")
    func renewalCreditedBefore() throws {
        let h = try Self.harness()
        let period = Self.transaction(
            "2000000000001100", product: "pro.monthly", type: "Auto-Renewable Subscription", wol: "71100",
            expiresInMs: 29 * 86_400_000
        )
        let job = try SignedTransactionTests.enqueue(h, try Self.sign(period), order: "o-1")
        try h.drain()
        #expect(try Self.verdict(h, job) == "verified")
        // Apple announces the same period (a restore's transaction id, the same webOrderLineItemId).
        var renewal = period
        renewal["transactionId"] = "2000000000001101"
        let id = try Self.apply(h, Note(type: "DID_RENEW", transaction: renewal))
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "1")
        #expect(try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(id)])
            == "no new credit: this period was credited before")
        #expect(try NotificationTests.events(h) == ["did_renew user-1 -"])
    }

    @Test("DID_RENEW of a period a REFUND applied before revoked (out of order): no credit")
    func renewalAfterItsRefund() throws {
        let h = try Self.harness()
        let first = Self.transaction(
            "2000000000001200", product: "pro.monthly", type: "Auto-Renewable Subscription", agoMs: 120_000,
            wol: "71200", expiresInMs: 86_400_000
        )
        _ = try SignedTransactionTests.enqueue(h, try Self.sign(first), order: "o-1")
        try h.drain()
        var next = first
        next["transactionId"] = "2000000000001201"
        next["webOrderLineItemId"] = "71201"
        next["purchaseDate"] = Harness.now
        next["expiresDate"] = Harness.now + 30 * 86_400_000
        _ = try Self.apply(h, Note(type: "REFUND", signedDate: Harness.now + 2000, transaction: Self.revoked(next)))
        let id = try Self.apply(h, Note(type: "DID_RENEW", signedDate: Harness.now + 1000, transaction: next))
        #expect(try Self.ledger(h, "2000000000001201") == nil)
        #expect(try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(id)])?
            .contains("revoked this period") == true)
    }

    @Test("a REFUND notification that revokes a credit sends NOTIFY receipt_revocations")
    func notifyOnNotificationPath() throws {
        let h = try NotificationTests.subscribed()
        let listener = try PostgresConnection(h.databaseURL)
        defer { listener.close() }
        try listener.listen("receipt_revocations")
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions"))
        _ = try Self.apply(h, Note(
            type: "REFUND", signedDate: Harness.now + 1000,
            transaction: NotificationTests.period("2000000000000000", wol: "", start: Harness.now - 60_000,
                                                  revokedAt: Harness.now)
        ))
        let payloads = try h.notificationsSoFar(on: listener, channel: "receipt_revocations")
        #expect(payloads.count == 1, "\(payloads)")
        let payload = try #require(payloads.first.flatMap { $0.data(using: .utf8) })
        let object = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        // The ledger row's id and nothing a listener could act on without reading the row.
        #expect((object["ledger_id"] as? NSNumber)?.stringValue == ledger)
        #expect(Array(object.keys) == ["ledger_id"], "\(object)")
    }
    @Test("receipt_credit() itself looks up what is known of revocations in its crediting statement, each kind by its own index")
    func knownRevocationInlined() throws {
        let h = try Self.harness()
        // The real function, its statements' plans shown by auto_explain (nested statements, sent to this session as
        // LOG messages), each planned once for every later call (a generic plan, as a PL/pgSQL function keeps its
        // statements'), while receipt_known_revocations is empty (as on a new database) and again once it has been
        // analyzed empty: each kind of entry must still be looked up by its own id, never every entry of an
        // environment (the cost of crediting would grow with every revocation recorded: 12 s for a batch of 100 at
        // 300,000 entries).
        let logged = ConditionLock<[String]>([])
        h.db.noticeHandler = { message in logged.withLock { $0.append(message) } }
        defer { h.db.noticeHandler = nil }
        for setting in ["LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                        "SET auto_explain.log_nested_statements = on", "SET client_min_messages = log",
                        "SET enable_seqscan = off", "SET enable_hashjoin = off", "SET enable_mergejoin = off",
                        "SET plan_cache_mode = force_generic_plan"] {
            _ = try h.db.query(setting)
        }
        let candidate = #"[{"transaction_id": "2000000000000960", "original_transaction_id": "2000000000000960", "#
            + #""product_id": "coins.100", "quantity": 1}]"#
        for analyzed in [false, true] {
            if analyzed { _ = try h.db.query("ANALYZE receipt_known_revocations") }
            logged.withLock { $0.removeAll() }
            _ = try h.db.query("BEGIN")
            let credited = try h.db.query(
                """
                SELECT state FROM receipt_credit(ARRAY[ROW(1, 99, 'com.example.app', 'o-1', 'user-1', 'Production',
                                                           $1::jsonb, 0, false)::receipt_credit_request])
                """,
                [candidate]
            )
            _ = try h.db.query("ROLLBACK")
            #expect(credited.rows == [["verified"]])
            // The crediting statement's plan: the one whose text calls receipt_known_revocation().
            let plans = logged.withLock { $0 }.filter { $0.contains("LEFT JOIN LATERAL receipt_known_revocation(") }
            let plan = try #require(plans.first, "no plan of receipt_credit()'s crediting statement was logged")
            #expect(!plan.contains("Function Scan on receipt_known_revocation"), "inlined into the caller's plan: \(plan)")
            for (index, column) in [("transaction", "transaction_id"), ("period", "web_order_line_item_id"),
                                    ("chain", "original_transaction_id")] {
                #expect(plan.contains("using receipt_known_revocations_\(index) on"), "\(index): \(plan)")
                #expect(plan.contains("Index Cond: (\(column) = "), "\(index) by its id: \(plan)")
            }
            #expect(!plan.contains("Index Cond: (environment"), "never by the environment alone: \(plan)")
            #expect(!plan.contains("Seq Scan on receipt_known_revocations"), "\(plan)")
        }
        _ = try h.db.query("RESET ALL")
    }
}
