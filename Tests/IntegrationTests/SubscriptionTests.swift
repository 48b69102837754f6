import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
@testable import Workers

/// Subscriptions as Apple runs them (issue 23): App Store Server Notifications with signed transaction and renewal
/// info, signed at test time, through the workers to receipt_subscriptions, its events and receipt_entitlements, on a
/// real PostgreSQL. The chain is NotificationTests.subscribed()'s: 2000000000000000, pro.monthly, user-1, credited by a
/// verdict with its first period ending in 29 days.
@Suite("Subscriptions: status, grace period, renewal preferences, entitlements", .serialized, .ownThread)
struct SubscriptionTests {
    static let chain = "2000000000000000"
    static let day: Int64 = 86_400_000

    /// A subscription notification as Apple signs it: `data.status`, the transaction and the renewal info each signed.
    struct Note {
        var type: String
        var subtype: String?
        var uuid = UUID().uuidString
        var signedDate: Int64
        var status: Int?
        var productId = "pro.monthly"
        var transactionId = "2000000000000000"
        var purchaseDate = Harness.now - 60_000
        var expiresDate = Harness.now + 29 * SubscriptionTests.day
        var renewal: [String: Any] = ["autoRenewStatus": 1, "autoRenewProductId": "pro.monthly"]
        /// More of the transaction's fields (billingPlanType, commitmentInfo, ...).
        var transactionExtra: [String: Any] = [:]

        func signed() throws -> String {
            let signer = try Harness.signer.get()
            var transaction: [String: Any] = [
                "transactionId": transactionId, "originalTransactionId": SubscriptionTests.chain,
                "webOrderLineItemId": "w-\(transactionId)", "bundleId": "com.example.app", "productId": productId,
                "purchaseDate": purchaseDate, "expiresDate": expiresDate, "quantity": 1,
                "type": "Auto-Renewable Subscription", "environment": "Production", "signedDate": signedDate,
            ]
            transaction.merge(transactionExtra) { $1 }
            var renewalInfo = renewal
            renewalInfo["originalTransactionId"] = SubscriptionTests.chain
            renewalInfo["productId"] = productId
            renewalInfo["environment"] = "Production"
            renewalInfo["signedDate"] = signedDate
            var data: [String: Any] = [
                "bundleId": "com.example.app", "environment": "Production", "appAppleId": NotificationTests.appAppleId,
                "signedTransactionInfo": try signer.sign(JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])),
                "signedRenewalInfo": try signer.sign(JSONSerialization.data(withJSONObject: renewalInfo, options: [.sortedKeys])),
            ]
            data["status"] = status
            var object: [String: Any] = [
                "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
                "data": data,
            ]
            object["subtype"] = subtype
            return try signer.sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        }
    }

    /// Receives and applies `notes` in the order given; returns each one's state.
    @discardableResult
    static func deliver(_ h: Harness, _ notes: Note...) throws -> [String] {
        var states: [String] = []
        for note in notes {
            let id = try NotificationTests.receive(h, try note.signed())
            try h.drain()
            states.append(try NotificationTests.state(h, id) ?? "none")
        }
        return states
    }

    static func subscription(_ h: Harness) throws -> [String: String] {
        let rows = try h.db.query(
            """
            SELECT status, product_id, coalesce(user_id, '-') AS user_id, auto_renew::text AS auto_renew,
                   coalesce(auto_renew_product_id, '-') AS auto_renew_product_id,
                   coalesce(expiration_reason, '-') AS expiration_reason,
                   coalesce(price_increase, '-') AS price_increase,
                   coalesce(renewal_price::text || ' ' || renewal_currency, '-') AS renewal,
                   (extract(epoch FROM expires_at) * 1000)::bigint::text AS expires_ms,
                   coalesce((extract(epoch FROM grace_period_expires_at) * 1000)::bigint::text, '-') AS grace_ms
            FROM receipt_subscriptions WHERE environment = 'Production' AND original_transaction_id = $1
            """, [chain]
        )
        guard let row = rows.rows.first else { return [:] }
        return Dictionary(uniqueKeysWithValues: zip(rows.columns, row.map { $0 ?? "" }))
    }

    /// The subscription events, in order: kind and reason.
    static func events(_ h: Harness) throws -> [String] {
        try h.db.query(
            """
            SELECT kind || coalesce(' ' || reason, '') AS e FROM receipt_events
            WHERE kind NOT IN ('renewed', 'revoked', 'reinstated') ORDER BY id
            """
        ).rows.map { $0[0] ?? "" }
    }

    static func entitlements(_ h: Harness) throws -> [String] {
        try h.db.query(
            """
            SELECT product_id || ' ' || coalesce(status, '-') || ' ' || (extract(epoch FROM expires_at) * 1000)::bigint
            FROM receipt_entitlements WHERE user_id = 'user-1' ORDER BY product_id
            """
        ).rows.map { $0[0] ?? "" }
    }

    @Test("a verdict's credit makes the chain's row: active, its owner, the period credited")
    func creditedByVerdict() throws {
        let h = try NotificationTests.subscribed()
        let row = try Self.subscription(h)
        #expect(row["status"] == "active")
        #expect(row["user_id"] == "user-1")
        #expect(row["expires_ms"] == String(Harness.now + 29 * Self.day))
        #expect(try Self.entitlements(h) == ["pro.monthly active \(Harness.now + 29 * Self.day)"])
    }

    @Test("issue 38: a renewal's storefrontId in the ledger, the renewal info's appAccountToken and win-back offers in the chain's row")
    func signedFieldsKept() throws {
        let h = try NotificationTests.subscribed()
        // The first period, credited by its job's verdict (a signed transaction): its storefront id too.
        #expect(try h.scalar("SELECT storefront_id FROM receipt_transactions WHERE transaction_id = '2000000000000000'")
            == "143441")
        let token = "5B0A2F3E-6A3C-4C1B-9A57-6F3D2B8E9C01"
        var renewal = Note(
            type: "DID_RENEW", signedDate: Harness.now, status: 1, transactionId: "2000000000000777",
            purchaseDate: Harness.now, expiresDate: Harness.now + 30 * Self.day
        )
        renewal.transactionExtra = ["storefront": "USA", "storefrontId": "143441"]
        renewal.renewal["appAccountToken"] = token
        renewal.renewal["eligibleWinBackOfferIds"] = ["winback.1", "winback.2"]
        #expect(try Self.deliver(h, renewal) == ["applied"])
        #expect(try h.scalar("SELECT storefront || ' ' || storefront_id FROM receipt_transactions "
            + "WHERE transaction_id = '2000000000000777'") == "USA 143441")
        #expect(try h.scalar("SELECT app_account_token::text || ' ' || array_to_string(eligible_win_back_offer_ids, ',') "
            + "FROM receipt_subscriptions") == token.lowercased() + " winback.1,winback.2")
        // The next renewal info names no offers: none now; a token that is not a UUID keeps the one known.
        var later = Note(type: "DID_CHANGE_RENEWAL_STATUS", signedDate: Harness.now + 1_000, status: 1)
        later.renewal["appAccountToken"] = "not-a-token"
        #expect(try Self.deliver(h, later) == ["applied"])
        #expect(try h.scalar("SELECT app_account_token::text || ' ' || coalesce(array_to_string(eligible_win_back_offer_ids, ','), '-') "
            + "FROM receipt_subscriptions") == token.lowercased() + " -")
    }

    @Test("failed renewal: grace period (served until its end), billing retry (not served), recovery; one event each")
    func graceRetryRecovery() throws {
        let h = try NotificationTests.subscribed()
        let t0 = Harness.now + 1_000
        let expired = Harness.now - Self.day  // the period the charge failed for ended a day ago
        let graceEnd = Harness.now + 5 * Self.day
        var fail = Note(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signedDate: t0, status: 4)
        fail.purchaseDate = expired - 30 * Self.day
        fail.expiresDate = expired
        fail.renewal = [
            "autoRenewStatus": 1, "autoRenewProductId": "pro.monthly", "expirationIntent": 2,
            "isInBillingRetryPeriod": true, "gracePeriodExpiresDate": graceEnd, "renewalPrice": 9990, "currency": "EUR",
        ]
        // The verdict credited a later period than this notification's: the row keeps the later end.
        #expect(try Self.deliver(h, fail) == ["applied"])
        var row = try Self.subscription(h)
        #expect(row["status"] == "grace_period")
        #expect(row["grace_ms"] == String(graceEnd))
        #expect(row["expiration_reason"] == "billing_error")
        #expect(row["renewal"] == "9.99 EUR")
        #expect(try Self.entitlements(h) == ["pro.monthly grace_period \(graceEnd)"], "served until the grace ends")
        #expect(try Self.events(h) == ["grace_period"])

        // The same state told again (another notification, same facts): no event.
        var again = fail
        again.uuid = UUID().uuidString
        again.signedDate = t0 + 1_000
        #expect(try Self.deliver(h, again) == ["applied"])
        #expect(try Self.events(h) == ["grace_period"])

        var graceOver = fail
        graceOver.type = "GRACE_PERIOD_EXPIRED"
        graceOver.subtype = nil
        graceOver.uuid = UUID().uuidString
        graceOver.signedDate = t0 + 2_000
        graceOver.status = nil  // derived: still in billing retry, the grace period over
        graceOver.renewal["gracePeriodExpiresDate"] = t0 + 1_500
        try Self.deliver(h, graceOver)
        row = try Self.subscription(h)
        #expect(row["status"] == "billing_retry")
        #expect(try Self.entitlements(h).isEmpty, "billing retry without grace is not served")
        #expect(try Self.events(h) == ["grace_period", "billing_issue billing retry"])

        let recovered = Note(
            type: "DID_RENEW", subtype: "BILLING_RECOVERY", signedDate: t0 + 3_000, status: 1,
            transactionId: "2000000000000009", purchaseDate: Harness.now, expiresDate: Harness.now + 30 * Self.day
        )
        try Self.deliver(h, recovered)
        row = try Self.subscription(h)
        #expect(row["status"] == "active")
        #expect(row["grace_ms"] == "-")
        #expect(row["expiration_reason"] == "-")
        #expect(row["expires_ms"] == String(Harness.now + 30 * Self.day))
        #expect(try Self.entitlements(h) == ["pro.monthly active \(Harness.now + 30 * Self.day)"])
        #expect(try Self.events(h) == ["grace_period", "billing_issue billing retry", "billing_recovered"])
    }

    /// DID_CHANGE_RENEWAL_STATUS turning auto-renew off at `t0`, and on again a second later.
    static func autoRenewOffThenOn(at t0: Int64) -> (off: Note, on: Note) {
        var off = Note(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signedDate: t0, status: 1)
        off.renewal = ["autoRenewStatus": 0, "autoRenewProductId": "pro.monthly"]
        var on = off
        on.uuid = UUID().uuidString
        on.subtype = "AUTO_RENEW_ENABLED"
        on.signedDate = t0 + 1_000
        on.renewal["autoRenewStatus"] = 1
        return (off, on)
    }

    @Test("auto-renew off and on, then EXPIRED VOLUNTARY: not served, the reason kept")
    func autoRenewAndExpiry() throws {
        let h = try NotificationTests.subscribed()
        let t0 = Harness.now + 1_000
        let (off, on) = Self.autoRenewOffThenOn(at: t0)
        var offAgain = off
        offAgain.uuid = UUID().uuidString
        offAgain.signedDate = t0 + 2_000
        try Self.deliver(h, off, on, offAgain)
        #expect(try Self.subscription(h)["auto_renew"] == "false")
        #expect(try Self.events(h) == ["auto_renew_disabled", "auto_renew_enabled", "auto_renew_disabled"])

        var expiry = Note(type: "EXPIRED", subtype: "VOLUNTARY", signedDate: t0 + 3_000, status: 2)
        expiry.expiresDate = t0 - 1_000
        expiry.purchaseDate = expiry.expiresDate - 30 * Self.day
        expiry.renewal = ["autoRenewStatus": 0, "autoRenewProductId": "pro.monthly", "expirationIntent": 1]
        try Self.deliver(h, expiry)
        let row = try Self.subscription(h)
        #expect(row["status"] == "expired")
        #expect(row["expiration_reason"] == "voluntary")
        #expect(try Self.entitlements(h).isEmpty, "an expired subscription is not served, whatever the ledger's end")
        #expect(try Self.events(h).last == "expired voluntary")
    }

    @Test("out of order and twice: older data changes nothing; a duplicate is a duplicate; the outcome is the newest")
    func outOfOrderAndDuplicate() throws {
        let h = try NotificationTests.subscribed()
        let t0 = Harness.now + 1_000
        let (off, on) = Self.autoRenewOffThenOn(at: t0)
        // Apple delivers the newer first, then the older, then the newer again.
        #expect(try Self.deliver(h, on, off, on) == ["applied", "applied", "duplicate"])
        #expect(try Self.subscription(h)["auto_renew"] == "true", "the older notification did not overwrite")
        let events = try Self.events(h)
        #expect(events.isEmpty, "auto-renew was on all along: no change of state \(events)")
        #expect(
            try h.scalar("SELECT (extract(epoch FROM signed_at) * 1000)::bigint FROM receipt_subscriptions")
                == String(t0 + 1_000)
        )
    }

    @Test("an upgrade serves the higher product at once; a downgrade waits for the renewal; price increase consent")
    func upgradeDowngradePriceIncrease() throws {
        let h = try NotificationTests.subscribed()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.plus', 'auto_renewable')")
        let t0 = Harness.now + 1_000

        var downgrade = Note(type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", signedDate: t0, status: 1)
        downgrade.renewal = ["autoRenewStatus": 1, "autoRenewProductId": "pro.lite"]
        try Self.deliver(h, downgrade)
        var row = try Self.subscription(h)
        #expect(row["product_id"] == "pro.monthly")
        #expect(row["auto_renew_product_id"] == "pro.lite")
        #expect(try Self.entitlements(h) == ["pro.monthly active \(Harness.now + 29 * Self.day)"])

        let upgradedAt = Harness.now + 2_000
        var upgrade = Note(
            type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", signedDate: t0 + 1_000, status: 1,
            productId: "pro.plus", transactionId: "2000000000000020", purchaseDate: upgradedAt,
            expiresDate: upgradedAt + 7 * Self.day  // a weekly plan: ends before the monthly period would have
        )
        upgrade.renewal = ["autoRenewStatus": 1, "autoRenewProductId": "pro.plus"]
        try Self.deliver(h, upgrade)
        row = try Self.subscription(h)
        #expect(row["product_id"] == "pro.plus")
        #expect(try Self.entitlements(h) == ["pro.plus active \(upgradedAt + 7 * Self.day)"], "only the higher product")

        var pending = upgrade
        pending.type = "PRICE_INCREASE"
        pending.subtype = "PENDING"
        pending.uuid = UUID().uuidString
        pending.signedDate = t0 + 2_000
        pending.renewal["priceIncreaseStatus"] = 0
        var accepted = pending
        accepted.subtype = "ACCEPTED"
        accepted.uuid = UUID().uuidString
        accepted.signedDate = t0 + 3_000
        accepted.renewal["priceIncreaseStatus"] = 1
        try Self.deliver(h, pending)
        #expect(try Self.subscription(h)["price_increase"] == "pending")
        try Self.deliver(h, accepted)
        #expect(try Self.subscription(h)["price_increase"] == "accepted")
        #expect(
            try Self.events(h) == [
                "product_change renews to pro.lite from \(try Self.timestamp(h, Harness.now + 29 * Self.day))",
                "product_change now pro.plus (was pro.monthly)", "price_increase pending", "price_increase accepted",
            ]
        )
    }

    /// A time in milliseconds as PostgreSQL writes a timestamptz in text.
    static func timestamp(_ h: Harness, _ ms: Int64) throws -> String {
        try #require(try h.scalar("SELECT to_timestamp($1::bigint / 1000.0)::text", [String(ms)]))
    }

    @Test("REVOKE: the chain's subscription is revoked and no longer served")
    func revoke() throws {
        let h = try NotificationTests.subscribed()
        var revoke = Note(type: "REVOKE", signedDate: Harness.now + 1_000)
        revoke.renewal = ["autoRenewStatus": 0, "autoRenewProductId": "pro.monthly"]
        try Self.deliver(h, revoke)
        #expect(try Self.subscription(h)["status"] == "revoked")
        #expect(try Self.entitlements(h).isEmpty)
    }
}
