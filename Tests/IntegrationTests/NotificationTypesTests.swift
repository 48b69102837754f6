import Foundation
import PostgresClient
import Testing

/// The notification types Apple added (issue 23) and the ones it will add: each verified, applied and passed on as an
/// event; RESCIND_CONSENT carries `appData` (its app transaction verified) in place of `data`. Signed at test time,
/// through the workers, real PostgreSQL.
@Suite("Notification types: ONE_TIME_CHARGE, RESCIND_CONSENT, METADATA_UPDATE, MIGRATION, PRICE_CHANGE, unknown ones", .serialized, .ownThread)
struct NotificationTypesTests {
    static func harness() throws -> Harness {
        let h = try Harness()
        _ = try h.db.query("UPDATE receipt_apps SET app_apple_id = $1", [String(NotificationTests.appAppleId)])
        return h
    }

    static func sign(_ object: [String: Any]) throws -> String {
        try Harness.signer.get().sign(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// A notification with `data` (a consumable's transaction; with `renewal`, a subscription's and its renewal info).
    static func note(_ type: String, subtype: String? = nil, subscription: Bool = false) throws -> String {
        var transaction: [String: Any] = [
            "transactionId": "3000000000000001", "originalTransactionId": "3000000000000001",
            "bundleId": "com.example.app", "productId": subscription ? "pro.monthly" : "coins.100",
            "purchaseDate": Harness.now - 60_000, "quantity": 1,
            "type": subscription ? "Auto-Renewable Subscription" : "Consumable", "environment": "Production",
            "signedDate": Harness.now,
        ]
        var data: [String: Any] = [
            "bundleId": "com.example.app", "environment": "Production", "appAppleId": NotificationTests.appAppleId,
        ]
        if subscription {
            transaction["expiresDate"] = Harness.now + 29 * 86_400_000
            data["signedRenewalInfo"] = try sign([
                "originalTransactionId": "3000000000000001", "productId": "pro.monthly", "autoRenewStatus": 1,
                "autoRenewProductId": "pro.monthly", "environment": "Production", "signedDate": Harness.now,
            ])
            data["status"] = 1
        }
        data["signedTransactionInfo"] = try sign(transaction)
        var object: [String: Any] = [
            "notificationType": type, "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": Harness.now, "data": data,
        ]
        object["subtype"] = subtype
        return try sign(object)
    }

    /// RESCIND_CONSENT as Apple sends it: `appData` (appAppleId, bundleId, environment, signedAppTransactionInfo), no
    /// `data`.
    static func rescindConsent(appBundle: String = "com.example.app", receiptType: String = "Production") throws -> String {
        let appTransaction = try sign([
            "appTransactionId": "704289572311573098", "bundleId": appBundle, "receiptType": receiptType,
            "appAppleId": NotificationTests.appAppleId, "applicationVersion": "1", "originalPlatform": "iOS",
            "signedDate": Harness.now,
        ])
        return try sign([
            "notificationType": "RESCIND_CONSENT", "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": Harness.now,
            "appData": [
                "appAppleId": NotificationTests.appAppleId, "bundleId": "com.example.app", "environment": "Production",
                "signedAppTransactionInfo": appTransaction,
            ] as [String: Any],
        ])
    }

    static func applied(_ h: Harness, _ payload: String) throws -> String? {
        let id = try NotificationTests.receive(h, payload)
        try h.drain()
        return try NotificationTests.state(h, id)
    }

    static func events(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT kind || ' ' || coalesce(notification_type, '-') || ' ' || coalesce(bundle_id, '-') || ' ' "
                + "|| coalesce(environment, '-') FROM receipt_events ORDER BY id"
        ).rows.map { $0[0] ?? "" }
    }

    @Test("RESCIND_CONSENT (appData, no data): verified, applied for the app, passed on as an event")
    func rescindConsent() throws {
        let h = try Self.harness()
        let payload = try Self.rescindConsent()
        #expect(try Self.applied(h, payload) == "applied")
        #expect(try Self.events(h) == ["rescind_consent RESCIND_CONSENT com.example.app Production"])
        #expect(
            try h.scalar("SELECT environment || ' ' || bundle_id FROM receipt_notifications")
                == "Production com.example.app"
        )
        // Its payload, appData and all, is kept as Apple signed it.
        #expect(try h.scalar("SELECT signed_payload FROM receipt_notifications") == payload)
        // The app download whose consent was rescinded, named in its row and event (it names no purchase).
        #expect(try h.scalar("SELECT transaction_id FROM receipt_events") == "704289572311573098")
        #expect(try h.scalar("SELECT transaction_id FROM receipt_notifications") == "704289572311573098")
    }

    @Test("RESCIND_CONSENT whose app transaction is another app's, or another environment's, is rejected")
    func rescindConsentMismatch() throws {
        let h = try Self.harness()
        #expect(try Self.applied(h, try Self.rescindConsent(appBundle: "com.example.other")) == "rejected:invalid_signature")
        #expect(try Self.applied(h, try Self.rescindConsent(receiptType: "Sandbox")) == "rejected:invalid_signature")
        #expect(try Self.events(h).isEmpty)
    }

    @Test("ONE_TIME_CHARGE, METADATA_UPDATE, MIGRATION, PRICE_CHANGE: applied and passed on as events of their type")
    func newerTypes() throws {
        let h = try Self.harness()
        #expect(try Self.applied(h, try Self.note("ONE_TIME_CHARGE")) == "applied")
        for type in ["METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE"] {
            #expect(try Self.applied(h, try Self.note(type, subscription: true)) == "applied", "\(type)")
        }
        let kinds = try Self.events(h)
        for type in ["ONE_TIME_CHARGE", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE"] {
            #expect(kinds.contains("\(type.lowercased()) \(type) com.example.app Production"), "\(kinds)")
        }
        // The subscription's renewal info was kept.
        #expect(try h.scalar("SELECT status FROM receipt_subscriptions WHERE original_transaction_id = '3000000000000001'") == "active")
    }

    @Test("a type Apple adds later is kept raw and passed on as an event")
    func unknownType() throws {
        let h = try Self.harness()
        #expect(try Self.applied(h, try Self.note("SOMETHING_NEW", subtype: "AND_ITS_SUBTYPE")) == "applied")
        #expect(try Self.events(h) == ["something_new SOMETHING_NEW com.example.app Production"])
        #expect(
            try h.scalar("SELECT notification_type || ' ' || subtype FROM receipt_notifications")
                == "SOMETHING_NEW AND_ITS_SUBTYPE"
        )
    }
}
