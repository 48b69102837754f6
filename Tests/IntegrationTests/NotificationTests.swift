import AppStoreSignedData
import AppleFixtureFiles
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Testing
@testable import Workers

/// App Store Server Notifications V2 from intake (receive_notification) through the workers' verification to the
/// ledger, its revocation history and the events the API layer reads. Notifications are signed at test time by an
/// App Store-shaped chain the workers trust; forged ones by a chain they do not.
@Suite("Notifications V2 end to end", .serialized, .ownThread)
struct NotificationTests {
    static let appAppleId: Int64 = 1_234_567_890

    /// A notification about one transaction, as Apple signs it: the transaction signed on its own, inside.
    struct Note {
        var type: String
        var subtype: String?
        var uuid = UUID().uuidString
        var signedDate = Harness.now
        var environment = "Production"
        var bundleId = "com.example.app"
        var appAppleId: Int64? = NotificationTests.appAppleId
        var transaction: [String: Any]?

        func signed(by signer: JWSSigner? = nil) throws -> String {
            let signer = try signer ?? Harness.signer.get()
            var data: [String: Any] = ["bundleId": bundleId, "environment": environment]
            data["appAppleId"] = appAppleId
            if let transaction {
                var transaction = transaction
                transaction["environment"] = environment
                transaction["signedDate"] = signedDate
                data["signedTransactionInfo"] = try signer.sign(
                    JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])
                )
            }
            var object: [String: Any] = [
                "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
                "data": data,
            ]
            object["subtype"] = subtype
            return try signer.sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        }
    }

    /// A subscription period of chain 2000000000000000.
    static func period(_ transactionId: String, wol: String, start: Int64, revokedAt: Int64? = nil) -> [String: Any] {
        var object: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": "2000000000000000", "webOrderLineItemId": wol,
            "bundleId": "com.example.app", "productId": "pro.monthly", "purchaseDate": start,
            "expiresDate": start + 30 * 86_400_000, "quantity": 1, "type": "Auto-Renewable Subscription",
        ]
        if let revokedAt { object["revocationDate"] = revokedAt; object["revocationReason"] = 1 }
        return object
    }

    /// A harness whose app has its Apple ID and whose product is an auto-renewable subscription, with the first
    /// period bought by user-1 (order o-1) verified and credited.
    static func subscribed() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(appAppleId)])
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        var first = SignedTransactionTests.Payload(transactionId: "2000000000000000")
        first.expiresInMs = 29 * 86_400_000
        _ = try SignedTransactionTests.enqueue(h, try SignedTransactionTests.sign(first), order: "o-1")
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE user_id = 'user-1'") == "1")
        return h
    }

    static func receive(_ h: Harness, _ payload: String) throws -> Int64 {
        try NotificationInbox(connection: h.db).receive(payload, source: .sql)
    }

    static func state(_ h: Harness, _ id: Int64) throws -> String? {
        try h.scalar("SELECT state || coalesce(':' || reason, '') FROM receipt_notifications WHERE id = $1", [String(id)])
    }

    static func events(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT kind || ' ' || coalesce(user_id, '-') || ' ' || coalesce(order_id, '-') AS e FROM receipt_events ORDER BY id"
        ).rows.map { $0[0] ?? "" }
    }

    @Test("REFUND revokes with one event; the same again changes nothing; REFUND_REVERSED reinstates; the history keeps both")
    func refundAndReversal() throws {
        let h = try Self.subscribed()
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions"))
        let start = Harness.now - 60_000
        let refund = try Note(
            type: "REFUND", signedDate: Harness.now + 1000,
            transaction: Self.period("2000000000000000", wol: "", start: start, revokedAt: Harness.now)
        ).signed()
        let first = try Self.receive(h, refund)
        #expect(try Self.receive(h, refund) == first, "the same bytes are one row")
        try h.drain()
        #expect(try Self.state(h, first) == "applied")
        #expect(try h.scalar("SELECT revoked_at IS NOT NULL FROM receipt_transactions") == "t")
        #expect(try Self.events(h) == ["revoked user-1 o-1"])

        // Apple sends it again, signed again (other bytes, the same notificationUUID): a duplicate.
        var again = try #require(try Self.note(of: refund))
        again.signedDate = Harness.now + 1000
        let resent = try Self.receive(h, try again.signed())
        try h.drain()
        #expect(try Self.state(h, resent) == "duplicate")
        #expect(try Self.events(h).count == 1)

        let reversal = try Self.receive(h, try Note(
            type: "REFUND_REVERSED", signedDate: Harness.now + 2000,
            transaction: Self.period("2000000000000000", wol: "", start: start)
        ).signed())
        try h.drain()
        #expect(try Self.state(h, reversal) == "applied")
        #expect(try h.scalar("SELECT revoked_at IS NULL FROM receipt_transactions") == "t")
        #expect(try Self.events(h) == ["revoked user-1 o-1", "reinstated user-1 o-1"])
        #expect(
            try h.db.query("SELECT action FROM receipt_revocations WHERE ledger_id = $1 ORDER BY id", [ledger])
                .rows.map { $0[0] ?? "" } == ["revoked", "reinstated"]
        )
        // The ledger's revocation columns move only with the history.
        #expect(throws: PostgresError.self) {
            try h.db.query("UPDATE receipt_transactions SET revoked_at = now()")
        }
    }

    /// A JWS's payload as a JSON object (read, not verified).
    static func payload(of jws: String) throws -> [String: Any]? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return nil }
        return try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }

    /// The `Note` a payload signed by `Note.signed` came from (to sign it again).
    static func note(of jws: String) throws -> Note? {
        let object = try #require(try Self.payload(of: jws))
        let payload = object["data"] as? [String: Any]
        var transaction: [String: Any]?
        if let nested = payload?["signedTransactionInfo"] as? String {
            transaction = try Self.payload(of: nested)
        }
        return Note(
            type: object["notificationType"] as? String ?? "", subtype: object["subtype"] as? String,
            uuid: object["notificationUUID"] as? String ?? "", signedDate: object["signedDate"] as? Int64 ?? 0,
            transaction: transaction
        )
    }

    @Test("out of order: a REFUND signed before the REFUND_REVERSED that arrived first does not revoke again")
    func outOfOrder() throws {
        let h = try Self.subscribed()
        let start = Harness.now - 60_000
        let refund = Note(
            type: "REFUND", signedDate: Harness.now + 1000,
            transaction: Self.period("2000000000000000", wol: "", start: start, revokedAt: Harness.now)
        )
        let reversal = Note(
            type: "REFUND_REVERSED", signedDate: Harness.now + 2000,
            transaction: Self.period("2000000000000000", wol: "", start: start)
        )
        _ = try Self.receive(h, try reversal.signed())
        try h.drain()
        let late = try Self.receive(h, try refund.signed())
        try h.drain()
        #expect(try Self.state(h, late) == "applied")
        #expect(try h.scalar("SELECT revoked_at IS NULL FROM receipt_transactions") == "t", "an older REFUND undid a newer reversal")
        #expect(try h.scalar("SELECT count(*) FROM receipt_revocations") == "2", "both are in the history")
        #expect(try Self.events(h).allSatisfy { !$0.hasPrefix("revoked") })
    }

    @Test("DID_RENEW credits the new period once, to the chain's owner with no order; a chain nobody owns is passed on")
    func renewal() throws {
        let h = try Self.subscribed()
        let renewal = Note(
            type: "DID_RENEW",
            transaction: Self.period("2000000000000005", wol: "9005", start: Harness.now + 29 * 86_400_000)
        )
        let first = try Self.receive(h, try renewal.signed())
        let again = try Self.receive(h, try renewal.signed())  // Apple's retry, signed again: a duplicate
        try h.drain()
        // Verified side by side (NOTIFICATION_THREADS): either copy may be the one applied, the other the duplicate.
        let id = try Self.state(h, first) == "applied" ? first : again
        #expect(try Self.state(h, id) == "applied")
        let rows = try h.db.query(
            """
            SELECT user_id, coalesce(order_id, '-') AS order_id, credit_key, notification_id::text AS n,
                   (expires_date > now() + interval '50 days')::text AS later
            FROM receipt_transactions WHERE transaction_id = '2000000000000005'
            """
        )
        #expect(rows.rows.count == 1)
        #expect(rows[0, "user_id"] == "user-1")
        #expect(rows[0, "order_id"] == "-")
        #expect(rows[0, "credit_key"] == "wol:9005")
        #expect(rows[0, "n"] == String(id))
        #expect(rows[0, "later"] == "true")
        #expect(try Self.events(h) == ["renewed user-1 -"])
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'duplicate'") == "1")

        // A purchase chain nobody here owns: kept and passed on, no credit.
        var stranger = Self.period("2000000000000100", wol: "9100", start: Harness.now)
        stranger["originalTransactionId"] = "2000000000000100"
        let unowned = try Self.receive(h, try Note(type: "DID_RENEW", transaction: stranger).signed())
        try h.drain()
        #expect(try Self.state(h, unowned) == "applied")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE transaction_id = '2000000000000100'") == "0")
        #expect(try Self.events(h).last == "did_renew - -")
    }

    @Test("a forged payload with a real notificationUUID, stored before the real one, blocks nothing")
    func forgedFirst() throws {
        let h = try Self.subscribed()
        let real = Note(
            type: "REFUND", transaction: Self.period("2000000000000000", wol: "", start: Harness.now - 60_000, revokedAt: Harness.now)
        )
        var forgedNote = real
        forgedNote.type = "REFUND_REVERSED"
        let forger = try JWSSigner(chain: SigningChain())
        let forged = try Self.receive(h, try forgedNote.signed(by: forger))
        let genuine = try Self.receive(h, try real.signed())
        try h.drain()
        #expect(try Self.state(h, forged) == "rejected:invalid_signature")
        #expect(try Self.state(h, genuine) == "applied")
        #expect(try Self.events(h) == ["revoked user-1 o-1"])
    }

    @Test("production needs the app's Apple ID: unset, the notification waits; another app's, rejected; another bundle, rejected")
    func appChecks() throws {
        let h = try Self.subscribed()
        let wrongApp = try Self.receive(h, try Note(type: "TEST", appAppleId: 42).signed())
        let otherBundle = try Self.receive(h, try Note(type: "TEST", bundleId: "com.other.app").signed())
        try h.drain()
        #expect(try Self.state(h, wrongApp) == "rejected:app_mismatch")
        #expect(try Self.state(h, otherBundle) == "rejected:bundle_mismatch")

        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = NULL")
        let waiting = try Self.receive(h, try Note(type: "TEST").signed())
        let workers = try h.startWorkers(1) { $0.drain = false }
        defer { for thread in workers { thread.worker.shutdown(); thread.wait(seconds: 10) } }
        let deadline = Date(timeIntervalSinceNow: 20)
        while try Self.state(h, waiting) != "retry", Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try Self.state(h, waiting) == "retry")
        #expect(try h.scalar("SELECT attempts FROM receipt_notifications WHERE id = $1", [String(waiting)]) == "0")
        #expect(try h.scalar("SELECT last_error FROM receipt_notifications WHERE id = $1", [String(waiting)])?
            .contains("APPSTORE_APP_APPLE_IDS") == true)
    }

    @Test("Apple's real TEST notification, verified offline at its signedDate, is applied and passed on", .needsAppleFixtures)
    func appleTestNotification() throws {
        let h = try Harness()
        _ = try h.db.query("INSERT INTO receipt_apps (bundle_id) VALUES ('com.Abilities')")
        let id = try Self.receive(h, try AppleFixtureFiles.appleTestNotification())
        let apple = SignedDataVerifier(configuration: .init(onlineChecks: false))
        let threads = try h.startWorkers(1, signedData: apple) { _ in }
        #expect(threads.allSatisfy { $0.wait(seconds: 60) })
        #expect(try Self.state(h, id) == "applied")
        #expect(try h.scalar("SELECT notification_uuid::text FROM receipt_notifications WHERE id = $1", [String(id)])
            == "5e09dcfc-205e-4ea1-9883-96676f394992")
        #expect(try Self.events(h) == ["test - -"])
    }

    @Test("work's periodic replay stores what Apple could not deliver, once; the workers then apply it")
    func periodicReplay() throws {
        let h = try Harness()
        let added = try h.fake.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100")])
        let transaction = try #require(added.first?.transactionId)
        let failed = try h.fake.purchases.recordNotification(
            type: "CONSUMPTION_REQUEST", transactionId: transaction, delivered: false
        )
        let loop = NotificationReplayLoop(
            replay: NotificationReplay(client: h.serverAPI, bundleIds: ["com.example.app"], environments: [.production]),
            databaseURL: h.databaseURL, intervalSeconds: 3600, logger: Logger(label: "test")
        )
        loop.round()
        loop.round()
        let rows = try h.db.query("SELECT signed_payload, source FROM receipt_notifications")
        #expect(rows.rows.count == 1, "only the notification Apple could not deliver, stored once")
        #expect(rows[0, "signed_payload"] == failed)
        #expect(rows[0, "source"] == "history")
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [
            try #require(try Self.appAppleId(of: failed)).description,
        ])
        try h.drain()
        #expect(try h.scalar("SELECT state FROM receipt_notifications") == "applied")
        #expect(try Self.events(h) == ["refund_requested - -"], "a CONSUMPTION_REQUEST's one event")
    }

    /// The appAppleId a notification carries.
    static func appAppleId(of jws: String) throws -> Int64? {
        ((try Self.payload(of: jws)?["data"] as? [String: Any])?["appAppleId"] as? NSNumber)?.int64Value
    }

    @Test("bad input at receive_notification: empty, not a JWS, over 1 MiB: refused with 22023, nothing stored")
    func badIntake() throws {
        let h = try Harness()
        for payload in ["", "not a jws", "a.b", String(repeating: "a", count: 1_048_577) + ".b.c"] {
            let error = #expect(throws: PostgresError.self) { try Self.receive(h, payload) }
            #expect(error?.sqlState == "22023", "\(String(describing: error))")
        }
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications") == "0")
    }
}
