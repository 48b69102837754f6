import FakeAppStore
import Foundation
import PostgresClient
import Testing

/// Notifications that carry no `data` (issue 38): RENEWAL_EXTENSION SUMMARY carries `summary`, EXTERNAL_PURCHASE_TOKEN
/// `externalPurchaseToken`; their app and environment are verified from those objects as Apple's SignedDataVerifier
/// does, and a shape with none of them is kept as unknown, never taken for a forgery. Signed at test time, through
/// the workers, real PostgreSQL.
@Suite("Notification shapes: summary, externalPurchaseToken, unknown", .serialized, .ownThread)
struct NotificationShapesTests {
    static let requestId = "efb27071-45a4-4aca-9854-2a1e9146f265"

    static func summary(
        bundleId: String = "com.example.app", environment: String = "Production",
        appAppleId: Int64 = NotificationTests.appAppleId, productId: String = "pro.monthly",
        requestId: String = requestId
    ) throws -> String {
        try NotificationTypesTests.sign([
            "notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": UUID().uuidString,
            "version": "2.0", "signedDate": Harness.now,
            "summary": [
                "environment": environment, "appAppleId": appAppleId, "bundleId": bundleId, "productId": productId,
                "requestIdentifier": requestId, "storefrontCountryCodes": ["CAN", "USA", "MEX"],
                "succeededCount": 5, "failedCount": 2,
            ] as [String: Any],
        ])
    }

    static func externalPurchaseToken(
        id: String = "b2158121-7af9-49d4-9561-1f588205523e", appAppleId: Int64 = NotificationTests.appAppleId,
        bundleId: String = "com.example.app"
    ) throws -> String {
        try NotificationTypesTests.sign([
            "notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED",
            "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": Harness.now,
            "externalPurchaseToken": [
                "externalPurchaseId": id, "tokenCreationDate": 1_698_148_950_000, "appAppleId": appAppleId,
                "bundleId": bundleId,
            ] as [String: Any],
        ])
    }

    static func events(_ h: Harness) throws -> [String] {
        try h.db.query(
            "SELECT kind || ' ' || coalesce(bundle_id, '-') || ' ' || coalesce(environment, '-') || ' ' "
                + "|| coalesce(product_id, '-') || ' ' || coalesce(transaction_id, '-') || ' ' || coalesce(reason, '-') "
                + "FROM receipt_events ORDER BY id"
        ).rows.map { $0[0] ?? "" }
    }

    @Test("RENEWAL_EXTENSION SUMMARY: verified from `summary`, applied, completes the mass request it reports")
    func summaryCompletesRequest() throws {
        let h = try NotificationTypesTests.harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        _ = try h.db.query(
            "SELECT receipt_renewal_extension_request($1, 'mass', 'Production', 'com.example.app', NULL, "
                + "'pro.monthly', ARRAY['CAN','USA','MEX'], 7, 3)",
            [Self.requestId]
        )
        _ = try h.db.query("SELECT receipt_renewal_extension_result($1, 'pending')", [Self.requestId])
        #expect(try NotificationTypesTests.applied(h, try Self.summary()) == "applied")
        #expect(
            try Self.events(h) == [
                "renewal_extension_summary com.example.app Production pro.monthly - request \(Self.requestId): "
                    + "5 succeeded, 2 failed"
            ]
        )
        #expect(
            try h.scalar(
                "SELECT state || ' ' || succeeded_count || ' ' || failed_count || ' ' || (completed_at IS NOT NULL) "
                    + "|| ' ' || (summary_notification_id = (SELECT id FROM receipt_notifications)) "
                    + "FROM receipt_renewal_extensions"
            ) == "complete 5 2 true true"
        )
        // Its status read afterwards (a stale "not complete yet") does not reopen it.
        _ = try h.db.query("SELECT receipt_renewal_extension_result($1, 'pending')", [Self.requestId])
        #expect(try h.scalar("SELECT state FROM receipt_renewal_extensions") == "complete")
    }

    @Test("a SUMMARY of a request made elsewhere is applied and says so; another app's or app id's is rejected")
    func summaryChecks() throws {
        let h = try NotificationTypesTests.harness()
        let unknown = try NotificationTypesTests.applied(h, try Self.summary(requestId: "other-request"))
        #expect(unknown == "applied")
        #expect(
            try h.scalar("SELECT last_error FROM receipt_notifications")
                == "no mass extension request other-request of pro.monthly recorded here"
        )
        #expect(
            try NotificationTypesTests.applied(h, try Self.summary(bundleId: "com.example.stranger"))
                == "rejected:bundle_mismatch"
        )
        #expect(
            try NotificationTypesTests.applied(h, try Self.summary(appAppleId: 99)) == "rejected:app_mismatch"
        )
        #expect(try Self.events(h).count == 1)
    }

    @Test("EXTERNAL_PURCHASE_TOKEN: its environment from the id (SANDBOX…), its app from the token, an event each")
    func externalPurchaseTokens() throws {
        let h = try NotificationTypesTests.harness()
        #expect(try NotificationTypesTests.applied(h, try Self.externalPurchaseToken()) == "applied")
        #expect(
            try NotificationTypesTests.applied(
                h, try Self.externalPurchaseToken(id: "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e", appAppleId: 1)
            ) == "applied"
        )
        #expect(
            try Self.events(h) == [
                "external_purchase_token com.example.app Production - b2158121-7af9-49d4-9561-1f588205523e UNREPORTED",
                "external_purchase_token com.example.app Sandbox - SANDBOX_b2158121-7af9-49d4-9561-1f588205523e "
                    + "UNREPORTED",
            ]
        )
        #expect(
            try h.scalar("SELECT string_agg(environment || ' ' || transaction_id, ', ' ORDER BY id) FROM receipt_notifications")
                == "Production b2158121-7af9-49d4-9561-1f588205523e, Sandbox SANDBOX_b2158121-7af9-49d4-9561-1f588205523e"
        )
        #expect(
            try h.scalar("SELECT effective_at = to_timestamp(1698148950) FROM receipt_events ORDER BY id LIMIT 1") == "t"
        )
        // In production the token's appAppleId is checked; the bundle always.
        #expect(try NotificationTypesTests.applied(h, try Self.externalPurchaseToken(appAppleId: 99)) == "rejected:app_mismatch")
        #expect(
            try NotificationTypesTests.applied(h, try Self.externalPurchaseToken(bundleId: "com.example.stranger"))
                == "rejected:bundle_mismatch"
        )
    }

    @Test("a shape with no data, summary, externalPurchaseToken or appData is kept as unknown, not a forgery")
    func unknownShape() throws {
        let h = try NotificationTypesTests.harness()
        let payload = try NotificationTypesTests.sign([
            "notificationType": "SOMETHING_NEW", "subtype": "LATER", "notificationUUID": UUID().uuidString,
            "version": "2.0", "signedDate": Harness.now, "somethingElse": ["bundleId": "com.example.app"],
        ])
        #expect(try NotificationTypesTests.applied(h, payload) == "applied")
        #expect(try Self.events(h) == ["unknown_shape - unknown - - SOMETHING_NEW/LATER"])
        #expect(
            try h.scalar("SELECT last_error FROM receipt_notifications")?.hasPrefix("a shape this version does not know")
                == true
        )
        // The same shape signed by a chain no root here trusts is still a forgery.
        let untrusted = try JWSSigner(chain: SigningChain())
        let reSigned = try untrusted.sign(
            JSONSerialization.data(
                withJSONObject: ["notificationType": "SOMETHING_NEW", "notificationUUID": UUID().uuidString,
                                 "signedDate": Harness.now] as [String: Any],
                options: [.sortedKeys]
            )
        )
        #expect(try NotificationTypesTests.applied(h, reSigned) == "rejected:invalid_signature")
    }

    @Test("SANDBOX_POLICY=reject refuses a sandbox token (SANDBOX id) and summary, not an unknown shape (no environment)")
    func sandboxPolicy() throws {
        let h = try NotificationTypesTests.harness()
        let token = try NotificationTests.receive(
            h, try Self.externalPurchaseToken(id: "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e")
        )
        let summary = try NotificationTests.receive(h, try Self.summary(environment: "Sandbox"))
        let unknown = try NotificationTests.receive(
            h,
            try NotificationTypesTests.sign([
                "notificationType": "SOMETHING_NEW", "notificationUUID": UUID().uuidString, "signedDate": Harness.now,
            ])
        )
        let production = try NotificationTests.receive(h, try Self.externalPurchaseToken())
        try h.drain { $0.rules.sandboxPolicy = .reject }
        #expect(try NotificationTests.state(h, token) == "rejected:sandbox_not_allowed")
        #expect(try NotificationTests.state(h, summary) == "rejected:sandbox_not_allowed")
        #expect(try NotificationTests.state(h, unknown) == "applied")
        #expect(try NotificationTests.state(h, production) == "applied")
    }
}
