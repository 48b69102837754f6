import AppStoreModel
import AppStoreSignedData
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue
import Testing
@testable import Workers

/// Issue 23, what the first pass left: billing plans and commitments kept from notifications, refreshes and verdicts;
/// a verdict's own time ordering it against notifications delivered late; and each condition of
/// receipt_subscription_refresh() held by a test of its own. Real PostgreSQL, data signed at test time.
@Suite("Subscriptions: billing plans, a verdict's order, refresh conditions", .serialized, .ownThread)
struct SubscriptionPlanTests {
    static let chain = SubscriptionTests.chain
    static let day = SubscriptionTests.day
    static let hour: Int64 = 3_600_000

    /// The plan and commitment columns of the chain's row, and its period's mark.
    static func plan(_ h: Harness) throws -> [String: String] {
        let rows = try h.db.query(
            """
            SELECT coalesce(billing_plan_type, '-') AS billing_plan_type,
                   coalesce(commitment_period || '/' || commitment_periods, '-') AS commitment,
                   coalesce((extract(epoch FROM commitment_expires_at) * 1000)::bigint::text, '-') AS commitment_ends_ms,
                   coalesce(commitment_price::text, '-') AS commitment_price,
                   coalesce(renewal_billing_plan_type, '-') AS renewal_billing_plan_type,
                   coalesce(commitment_auto_renew::text, '-') AS commitment_auto_renew,
                   coalesce(commitment_renewal_product_id, '-') AS commitment_renewal_product_id,
                   coalesce(commitment_renewal_billing_plan_type, '-') AS commitment_renewal_billing_plan_type,
                   coalesce((extract(epoch FROM commitment_renewal_at) * 1000)::bigint::text, '-')
                       AS commitment_renewal_ms,
                   coalesce(commitment_renewal_price::text, '-') AS commitment_renewal_price,
                   coalesce(renewal_offer_type::text || ' ' || renewal_offer_identifier || ' ' || renewal_offer_period
                            || ' ' || renewal_offer_discount_type, '-') AS renewal_offer,
                   coalesce(app_transaction_id, '-') AS app_transaction_id,
                   coalesce((extract(epoch FROM period_signed_at) * 1000)::bigint::text, '-') AS period_signed_ms
            FROM receipt_subscriptions WHERE environment = 'Production' AND original_transaction_id = $1
            """, [chain]
        )
        guard let row = rows.rows.first else { return [:] }
        return Dictionary(uniqueKeysWithValues: zip(rows.columns, row.map { $0 ?? "" }))
    }

    /// The ledger's plan and signing time of one transaction.
    static func ledger(_ h: Harness, _ transactionId: String) throws -> String? {
        try h.scalar(
            """
            SELECT coalesce(billing_plan_type, '-') || ' ' ||
                   coalesce((extract(epoch FROM signed_at) * 1000)::bigint::text, '-')
            FROM receipt_transactions WHERE transaction_id = $1
            """, [transactionId]
        )
    }

    static let commitmentEnd = Harness.now + 300 * day
    /// A monthly plan with a 12-month commitment, period 3 of 12, as Apple signs it in a transaction.
    static var monthlyTransaction: [String: Any] { [
        "billingPlanType": "MONTHLY", "appTransactionId": "704289572311617211",
        "offerIdentifier": "summer", "offerPeriod": "P1M", "offerType": 2, "offerDiscountType": "PAY_AS_YOU_GO",
        "commitmentInfo": [
            "billingPeriodNumber": 3, "totalBillingPeriods": 12, "commitmentExpiresDate": commitmentEnd,
            "commitmentPrice": 9_990,
        ] as [String: Any],
    ] }
    /// Its renewal info: the next period on the same plan with a promotional offer; the commitment renews.
    static var monthlyRenewal: [String: Any] { [
        "autoRenewStatus": 1, "autoRenewProductId": "pro.monthly", "renewalBillingPlanType": "MONTHLY",
        "offerType": 2, "offerIdentifier": "winback", "offerPeriod": "P3M", "offerDiscountType": "PAY_AS_YOU_GO",
        "appTransactionId": "704289572311617211",
        "commitmentInfo": [
            "commitmentAutoRenewProductId": "pro.monthly", "commitmentAutoRenewStatus": 1,
            "commitmentRenewalBillingPlanType": "BILLED_UPFRONT", "commitmentRenewalDate": commitmentEnd,
            "commitmentRenewalPrice": 99_990,
        ] as [String: Any],
    ] }

    static func expectMonthlyPlan(_ row: [String: String]) {
        #expect(row["billing_plan_type"] == "MONTHLY")
        #expect(row["commitment"] == "3/12")
        #expect(row["commitment_ends_ms"] == String(commitmentEnd))
        #expect(row["commitment_price"] == "9.99")
        #expect(row["renewal_billing_plan_type"] == "MONTHLY")
        #expect(row["commitment_auto_renew"] == "true")
        #expect(row["commitment_renewal_product_id"] == "pro.monthly")
        #expect(row["commitment_renewal_billing_plan_type"] == "BILLED_UPFRONT")
        #expect(row["commitment_renewal_ms"] == String(commitmentEnd))
        #expect(row["commitment_renewal_price"] == "99.99")
        #expect(row["renewal_offer"] == "2 winback P3M PAY_AS_YOU_GO")
        #expect(row["app_transaction_id"] == "704289572311617211")
    }

    @Test("a notification's plan and commitment: the row keeps them, the ledger the period's plan and signing time")
    func planFromNotification() throws {
        let h = try NotificationTests.subscribed()
        let signed = Harness.now + 1_000
        var renew = SubscriptionTests.Note(
            type: "DID_RENEW", signedDate: signed, status: 1, transactionId: "2000000000000031",
            purchaseDate: Harness.now, expiresDate: Harness.now + 30 * Self.day
        )
        renew.transactionExtra = Self.monthlyTransaction
        renew.renewal = Self.monthlyRenewal
        #expect(try SubscriptionTests.deliver(h, renew) == ["applied"])
        let row = try Self.plan(h)
        Self.expectMonthlyPlan(row)
        #expect(row["period_signed_ms"] == String(signed))
        #expect(try Self.ledger(h, "2000000000000031") == "MONTHLY \(signed)")
        // The ledger keeps the offer the period was bought with, too (issue 24's columns).
        #expect(
            try h.scalar("SELECT offer_type || ' ' || offer_discount_type FROM receipt_transactions "
                             + "WHERE transaction_id = '2000000000000031'") == "2 PAY_AS_YOU_GO"
        )

        // A later notification of the period before (a REFUND of the first period) leaves the current period's plan.
        var refund = SubscriptionTests.Note(type: "REFUND", signedDate: signed + 1_000)
        refund.renewal = Self.monthlyRenewal
        try SubscriptionTests.deliver(h, refund)
        #expect(try Self.plan(h)["commitment"] == "3/12")
    }

    @Test("a refresh's plan and commitment are kept as a notification's")
    func planFromRefresh() throws {
        let h = try SubscriptionRefreshTests.harness()
        _ = try h.db.query(
            "INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id) "
                + "VALUES ('Production', $1, 'user-1')", [Self.chain]
        )
        let refresh = SubscriptionRefreshTests.refresh(h)
        let item = try SubscriptionRefreshTests.item(
            transaction: {
                $0.merge(Self.monthlyTransaction) { $1 }
                $0["price"] = 9_990
                $0["currency"] = "EUR"
                $0["storefront"] = "DEU"
            },
            renewal: { $0.merge(Self.monthlyRenewal) { $1 } }
        )
        let asked = SubscriptionRefresh.Chain(
            environment: "Production", bundleId: "com.example.app", originalTransactionId: Self.chain,
            transactionId: Self.chain
        )
        let outcome = try refresh.outcome(of: item, chain: asked, now: Date())
        #expect(try refresh.apply([outcome], h.db) == ["active"])
        Self.expectMonthlyPlan(try Self.plan(h))
        #expect(try Self.ledger(h, "2000000000000001") == "MONTHLY \(Harness.now)")
        // The renewal the refresh credited has Apple's price in the ledger, as a notification's would (issue 24).
        #expect(
            try h.scalar("SELECT price::text || ' ' || currency || ' ' || storefront || ' ' || offer_type "
                             + "FROM receipt_transactions") == "9.990 EUR DEU 2"
        )
    }

    /// A StoreKit 2 verdict for the chain's next period, signed at `signed`, on the monthly plan.
    static func creditNextPeriod(_ h: Harness, signed: Int64, transactionId: String = "2000000000000041") throws {
        let transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": Self.chain,
            "webOrderLineItemId": "w-\(transactionId)", "bundleId": "com.example.app", "productId": "pro.monthly",
            "environment": "Production", "quantity": 1, "purchaseDate": Harness.now - 60_000,
            "expiresDate": Harness.now + 40 * Self.day, "signedDate": signed, "type": "Auto-Renewable Subscription",
            "inAppOwnershipType": "PURCHASED", "transactionReason": "RENEWAL", "billingPlanType": "MONTHLY",
        ]
        let jws = try Harness.signer.get().sign(JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys]))
        _ = try SignedTransactionTests.enqueue(h, jws, order: "o-\(transactionId)")
        try h.drain()
    }

    @Test("a verdict's credit keeps the period's plan and Apple's signing time in the ledger and the row")
    func planFromVerdict() throws {
        let h = try NotificationTests.subscribed()
        try Self.creditNextPeriod(h, signed: Harness.now + 5_000)
        #expect(try Self.ledger(h, "2000000000000041") == "MONTHLY \(Harness.now + 5_000)")
        let row = try Self.plan(h)
        #expect(row["billing_plan_type"] == "MONTHLY")
        #expect(row["period_signed_ms"] == String(Harness.now + 5_000))
        #expect(try SubscriptionTests.subscription(h)["expires_ms"] == String(Harness.now + 40 * Self.day))
    }

    /// Issue 23: a verdict used not to move the row's order, so a notification signed before the verdict's
    /// transaction, delivered after it, put a renewed chain back in billing retry.
    @Test("a notification signed before a verdict's transaction, delivered after it, does not set the status back")
    func verdictOrdersLateNotification() throws {
        let h = try NotificationTests.subscribed()
        let verdictSigned = Harness.now + 10_000
        try Self.creditNextPeriod(h, signed: verdictSigned)
        #expect(try SubscriptionTests.subscription(h)["status"] == "active")

        // Signed before the verdict's transaction: the charge for the period before failed (billing retry), and the
        // customer turned auto-renew off. Delivered only now.
        var late = SubscriptionTests.Note(
            type: "DID_FAIL_TO_RENEW", signedDate: verdictSigned - 5_000, status: 3,
            transactionId: "2000000000000039", purchaseDate: Harness.now - 31 * Self.day,
            expiresDate: Harness.now - Self.day
        )
        late.renewal = [
            "autoRenewStatus": 0, "autoRenewProductId": "pro.monthly", "expirationIntent": 2,
            "isInBillingRetryPeriod": true,
        ]
        #expect(try SubscriptionTests.deliver(h, late) == ["applied"])
        let row = try SubscriptionTests.subscription(h)
        #expect(row["status"] == "active", "the verdict's period is newer than the failed charge")
        #expect(row["expiration_reason"] == "-")
        #expect(row["expires_ms"] == String(Harness.now + 40 * Self.day))
        #expect(try SubscriptionTests.entitlements(h) == ["pro.monthly active \(Harness.now + 40 * Self.day)"])
        // What the verdict does not know is still taken: the renewal preference.
        #expect(row["auto_renew"] == "false")
        #expect(try SubscriptionTests.events(h) == ["auto_renew_disabled"])

        // Signed after the verdict's transaction: the status is Apple's again.
        var later = late
        later.uuid = UUID().uuidString
        later.signedDate = verdictSigned + 1_000
        later.transactionId = "2000000000000041"
        later.purchaseDate = Harness.now - 60_000
        later.expiresDate = Harness.now + 40 * Self.day
        try SubscriptionTests.deliver(h, later)
        #expect(try SubscriptionTests.subscription(h)["status"] == "billing_retry")
    }

    /// The app may send an old period's transaction signed long after: a notification signed before it that brings a
    /// later period still is applied (its period is newer than anything the verdict knew).
    @Test("a notification signed before a verdict's transaction but bringing a later period sets the period")
    func laterPeriodBeforeVerdict() throws {
        let h = try NotificationTests.subscribed()
        let verdictSigned = Harness.now + 10_000
        try Self.creditNextPeriod(h, signed: verdictSigned)
        let renewed = SubscriptionTests.Note(
            type: "DID_RENEW", signedDate: verdictSigned - 5_000, status: 1, transactionId: "2000000000000043",
            purchaseDate: Harness.now, expiresDate: Harness.now + 70 * Self.day
        )
        #expect(try SubscriptionTests.deliver(h, renewed) == ["applied"])
        let row = try SubscriptionTests.subscription(h)
        #expect(row["expires_ms"] == String(Harness.now + 70 * Self.day))
        #expect(row["status"] == "active")
        #expect(try Self.plan(h)["period_signed_ms"] == String(verdictSigned - 5_000))
    }

    /// Online (OCSP), the verifier needs no signedDate: the refresh refuses a renewal info without one itself, as it
    /// would have no order against the row. (Offline, the verifier already refuses it: SubscriptionRefreshTests.)
    @Test("a refresh's renewal info without signedDate is refused after verification")
    func refreshNeedsRenewalSignedDate() throws {
        let transaction = try SignedTransaction(
            payload: Array(
                (#"{"transactionId":"2000000000000001","originalTransactionId":"2000000000000000","#
                    + #""bundleId":"com.example.app","productId":"pro.monthly","environment":"Production"}"#).utf8
            )
        )
        func renewal(signedDate: Int64?) throws -> SignedRenewalInfo {
            var object: [String: Any] = [
                "originalTransactionId": Self.chain, "productId": "pro.monthly", "environment": "Production",
            ]
            object["signedDate"] = signedDate
            return try JSONDecoder().decode(SignedRenewalInfo.self, from: JSONSerialization.data(withJSONObject: object))
        }
        let chain = SubscriptionRefresh.Chain(
            environment: "Production", bundleId: "com.example.app", originalTransactionId: Self.chain,
            transactionId: Self.chain
        )
        let good = try SubscriptionRefresh.outcome(
            transaction: transaction, renewal: try renewal(signedDate: Harness.now), status: 1, answerChain: Self.chain,
            chain: chain
        )
        #expect(good.notification?.signedDateMs == Harness.now)
        #expect(throws: SubscriptionRefresh.RefreshError("renewal info without signedDate")) {
            try SubscriptionRefresh.outcome(
                transaction: transaction, renewal: try renewal(signedDate: nil), status: 1, answerChain: Self.chain,
                chain: chain
            )
        }
    }

    // MARK: - receipt_subscription_refresh()'s conditions, each on its own

    /// What `work` writes for one chain of Get All Subscription Statuses, with `change` made.
    static func refreshDocument(
        _ change: (inout [String: Any], inout [String: Any], inout [String: Any]) -> Void = { _, _, _ in }
    ) throws -> String {
        var note: [String: Any] = [
            "type": SubscriptionRefresh.notificationType, "environment": "Production", "bundle_id": "com.example.app",
            "signed_date_ms": Harness.now, "status": 1,
        ]
        var transaction: [String: Any] = [
            "transaction_id": "2000000000000051", "original_transaction_id": Self.chain,
            "web_order_line_item_id": "w-51", "product_id": "pro.monthly", "quantity": 1,
            "purchase_date_ms": Harness.now - Self.hour, "expires_date_ms": Harness.now + Self.hour,
        ]
        var renewal: [String: Any] = [
            "original_transaction_id": Self.chain, "product_id": "pro.monthly", "auto_renew_status": 1,
        ]
        change(&note, &transaction, &renewal)
        let document: [String: Any] = ["notification": note, "transaction": transaction, "renewal": renewal]
        return String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
    }

    /// A database where the chain is user-1's in Production and in Xcode.
    static func owned() throws -> Harness {
        let h = try SubscriptionRefreshTests.harness()
        _ = try h.db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.monthly', 'auto_renewable')")
        for environment in ["Production", "Xcode"] {
            _ = try h.db.query(
                "INSERT INTO receipt_purchase_owners (environment, original_transaction_id, user_id) "
                    + "VALUES ($1, $2, 'user-1')", [environment, Self.chain]
            )
        }
        return h
    }

    static func applyRefresh(_ h: Harness, _ document: String) throws -> String? {
        try h.scalar("SELECT receipt_subscription_refresh($1::jsonb)", [document])
    }

    static func counts(_ h: Harness) throws -> String {
        try h.scalar(
            "SELECT (SELECT count(*) FROM receipt_transactions) || ' credited, ' || "
                + "(SELECT count(*) FROM receipt_subscriptions) || ' rows'"
        ) ?? ""
    }

    @Test("the document as work writes it credits the period and keeps the row (the cases below change one thing)")
    func refreshDocumentApplies() throws {
        let h = try Self.owned()
        #expect(try Self.applyRefresh(h, try Self.refreshDocument()) == "active")
        #expect(try Self.counts(h) == "1 credited, 1 rows")
    }

    /// One change each, and what must be left: nothing at all (the chain is not one the refresh may touch), or the
    /// row kept without a credit (the period is not one to credit).
    enum Refused: String, CaseIterable, Sendable {
        case testEnvironment, noChain, noSignedDate, notOurApp, noExpiry, revokedPeriod, knownRevoked
    }

    @Test("receipt_subscription_refresh refuses, or does not credit, what it must not", arguments: Refused.allCases)
    func refreshRefuses(_ refused: Refused) throws {
        let h = try Self.owned()
        let document: String
        switch refused {
        case .testEnvironment:  // Apple is asked of Production and Sandbox only: Xcode data is never a refresh's
            document = try Self.refreshDocument { note, _, _ in note["environment"] = "Xcode" }
        case .noChain:  // a transaction naming no purchase chain (the renewal info's chain is not taken instead)
            document = try Self.refreshDocument { _, transaction, _ in
                transaction["transaction_id"] = nil
                transaction["original_transaction_id"] = nil
            }
        case .noSignedDate:  // no order against what the row holds: nothing applied
            document = try Self.refreshDocument { note, _, _ in note["signed_date_ms"] = nil }
        case .notOurApp:
            document = try Self.refreshDocument { note, _, _ in note["bundle_id"] = "com.example.stranger" }
        case .noExpiry:  // no subscription period: nothing to credit
            document = try Self.refreshDocument { _, transaction, _ in transaction["expires_date_ms"] = nil }
        case .revokedPeriod:  // Apple refunded the period: the row says so, the ledger does not credit it
            document = try Self.refreshDocument { _, transaction, _ in
                transaction["revocation_date_ms"] = Harness.now - 1_000
            }
        case .knownRevoked:  // a REFUND applied before revoked this transaction
            _ = try h.db.query(
                """
                INSERT INTO receipt_known_revocations (environment, transaction_id, original_transaction_id,
                                                       web_order_line_item_id, scope, action, effective_at, signed_at)
                VALUES ('Production', '2000000000000051', $1, 'w-51', 'transaction', 'revoked', now(), now())
                """, [Self.chain]
            )
            document = try Self.refreshDocument()
        }
        let status = try Self.applyRefresh(h, document)
        switch refused {
        case .testEnvironment, .noChain, .noSignedDate, .notOurApp:
            #expect(status == nil)
            #expect(try Self.counts(h) == "0 credited, 0 rows")
        case .noExpiry, .revokedPeriod, .knownRevoked:
            #expect(try Self.counts(h) == "0 credited, 1 rows")
            #expect(try h.scalar("SELECT count(*) FROM receipt_events WHERE kind = 'renewed'") == "0")
        }
    }
}
