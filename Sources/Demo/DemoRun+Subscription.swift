import AppStoreClient
import AppStoreSignedData
import ConsoleOutput
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Workers

/// The demo's subscriber in billing grace period (issue 23): a StoreKit 2 subscription is credited (active until its
/// period ends), then Apple's renewal charge fails and it signs DID_FAIL_TO_RENEW with subtype GRACE_PERIOD; the
/// worker applies it and receipt_entitlements keeps serving the subscriber until the grace period ends, as Apple asks.
extension DemoRun {
    /// The subscription's product, an auto-renewable one of the demo's catalog.
    static let subscriptionProduct = "club.monthly"
    /// Apple's grace periods are 3, 16 or 28 days; the demo's app chose 16.
    static let graceDays: Int64 = 16

    /// What the subscriber was served before and after the failed charge.
    struct GraceSubscriber {
        /// The subscription's order and job, a verdict like the other orders' (the verdicts table, the ledger, the
        /// totals).
        var job: (order: DemoOrder, id: Int64)
        var userId: String
        var originalTransactionId: String
        /// One row per step: what happened, the status and until when receipt_entitlements serves the product.
        var steps: [[String]]
        var status: String
        var servedUntilMs: Int64?
        var graceEndsMs: Int64
        var events: [String]
    }

    /// Credits the subscription (a verdict), then delivers the failed renewal and runs a worker until it is applied.
    func graceSubscriber(
        tag: String, signer: JWSSigner, client: AppStoreClient, signedData: SignedDataVerifier,
        connection: PostgresConnection, store: JobStore, progress: inout DemoProgress
    ) throws -> GraceSubscriber {
        let userId = "olivia"
        let nowMs = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let day: Int64 = 86_400_000
        // A chain id of its own: the ledger keeps every credit forever, also in a DATABASE_URL that outlives runs.
        let original = String(nowMs * 10 + 7_000_000)
        let periodEnds = nowMs + 60_000  // the charge for the next period fails as this one ends
        _ = try connection.query(
            "INSERT INTO receipt_products (product_id, kind) VALUES ($1, 'auto_renewable') ON CONFLICT DO NOTHING",
            [Self.subscriptionProduct]
        )
        _ = try connection.query(
            "UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = $2",
            [String(Self.appAppleId), DemoScenarios.app]
        )
        let transaction: [String: Any] = [
            "transactionId": original, "originalTransactionId": original, "webOrderLineItemId": original + "1",
            "bundleId": DemoScenarios.app, "productId": Self.subscriptionProduct, "quantity": 1,
            "purchaseDate": periodEnds - 30 * day, "expiresDate": periodEnds, "signedDate": nowMs,
            "type": "Auto-Renewable Subscription", "environment": "Production", "inAppOwnershipType": "PURCHASED",
            "transactionReason": "PURCHASE", "billingPlanType": "BILLED_UPFRONT",
        ]
        let signedTransaction = try signer.sign(JSONSerialization.data(withJSONObject: transaction, options: .sortedKeys))
        let order = DemoOrder(
            orderId: "order-\(tag)\(DemoScenarios.subscriptionOrderNumber)", scenario: "StoreKit 2 subscription",
            userId: userId, productId: Self.subscriptionProduct, transactionId: original, receipt: signedTransaction,
            signed: true, phase: 4, expected: .init(state: "verified", environment: "Production")
        )
        let job = try store.enqueueTransaction(
            signedTransaction: signedTransaction, transactionId: original, orderId: order.orderId,
            userId: userId, productId: Self.subscriptionProduct, bundleId: DemoScenarios.app
        )
        try drain([job], client: client, signedData: signedData, connection: connection, progress: &progress)
        var steps = [["StoreKit 2 purchase credited"] + (try served(userId, connection))]

        // Apple retries the charge and keeps the subscriber served for 16 days: it signs that after the credit.
        let graceEnds = periodEnds + Self.graceDays * day
        let signedAt = max(Int64((Date().timeIntervalSince1970 * 1000).rounded()), nowMs + 1)
        let renewal: [String: Any] = [
            "originalTransactionId": original, "productId": Self.subscriptionProduct, "autoRenewStatus": 1,
            "autoRenewProductId": Self.subscriptionProduct, "expirationIntent": 2, "isInBillingRetryPeriod": true,
            "gracePeriodExpiresDate": graceEnds, "environment": "Production", "signedDate": signedAt,
        ]
        let notification: [String: Any] = [
            "notificationType": "DID_FAIL_TO_RENEW", "subtype": "GRACE_PERIOD", "notificationUUID": UUID().uuidString,
            "version": "2.0", "signedDate": signedAt,
            "data": [
                "bundleId": DemoScenarios.app, "environment": "Production", "appAppleId": Self.appAppleId, "status": 4,
                "signedTransactionInfo": signedTransaction,
                "signedRenewalInfo": try signer.sign(JSONSerialization.data(withJSONObject: renewal, options: .sortedKeys)),
            ] as [String: Any],
        ]
        let payload = try signer.sign(JSONSerialization.data(withJSONObject: notification, options: .sortedKeys))
        let id = try NotificationInbox(connection: connection).receive(payload, source: .sql)
        try applyNotification(id, client: client, signedData: signedData, connection: connection)
        steps.append(["DID_FAIL_TO_RENEW GRACE_PERIOD applied"] + (try served(userId, connection)))

        let row = try connection.query(
            """
            SELECT s.status, (extract(epoch FROM e.expires_at) * 1000)::bigint AS served_until
            FROM receipt_subscriptions s
            LEFT JOIN receipt_entitlements e ON e.user_id = s.user_id AND e.product_id = s.product_id
            WHERE s.environment = 'Production' AND s.original_transaction_id = $1
            """,
            [original]
        )
        let events = try connection.query(
            "SELECT kind FROM receipt_events WHERE original_transaction_id = $1 ORDER BY id", [original]
        ).rows.compactMap { $0.first ?? nil }
        return GraceSubscriber(
            job: (order, job), userId: userId, originalTransactionId: original, steps: steps,
            status: row[0, "status"] ?? "none",
            servedUntilMs: row.int64(0, "served_until"), graceEndsMs: graceEnds, events: events
        )
    }

    /// The subscriber's entitlement to the product: its status and until when (UTC), or not served.
    private func served(_ userId: String, _ connection: PostgresConnection) throws -> [String] {
        let result = try connection.query(
            """
            SELECT coalesce(status, '-') AS status,
                   to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS until
            FROM receipt_entitlements WHERE user_id = $1 AND product_id = $2
            """,
            [userId, Self.subscriptionProduct]
        )
        guard let status = result[0, "status"] else { return ["-", "not served"] }
        return [status, result[0, "until"] ?? "-"]
    }

    /// Runs a worker until notification `id` is no longer waiting.
    private func applyNotification(
        _ id: Int64, client: AppStoreClient, signedData: SignedDataVerifier, connection: PostgresConnection
    ) throws {
        let configuration = WorkerConfiguration(
            workerId: "demo-\(getpid())-notifications", maxInFlight: 8, leaseSeconds: 10, pollIntervalSeconds: 0.05,
            retry: Self.retry, rules: .init(bundleIds: Set(Self.apps)), schedulerIntervalSeconds: 0.1,
            shutdownGraceSeconds: 2
        )
        var logger = Logger(label: "receipt-worker.demo")
        logger.logLevel = .warning
        let worker = Worker(
            configuration: configuration, databaseURL: environment.databaseURL, client: client,
            signedData: signedData, logger: logger
        )
        let thread = try WorkerThread(worker)
        defer { _ = thread.stop(waitingUpTo: configuration.shutdownGraceSeconds + 10) }
        let deadline = Date(timeIntervalSinceNow: options.timeoutSeconds)
        func state() throws -> String {
            try connection.query("SELECT state FROM receipt_notifications WHERE id = $1", [String(id)])[0, "state"]
                ?? "none"
        }
        while ["queued", "running", "retry"].contains(try state()), Date() < deadline, !stopRequested.withLock({ $0 }) {
            if let error = thread.error { throw DemoError(.worker, "the worker stopped: \(error)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The subscriber as a table, and whether it went as the demo expects: in grace period, served until the grace
    /// period ends, with one grace_period event.
    static func graceReport(_ subscriber: GraceSubscriber) -> (text: String, expected: Bool) {
        let expected = subscriber.status == "grace_period" && subscriber.servedUntilMs == subscriber.graceEndsMs
            && subscriber.events.filter { $0 == "grace_period" }.count == 1
        let table = TextTable(
            ["user", "product", "step", "status", "served until (UTC)"],
            subscriber.steps.map { [subscriber.userId, Self.subscriptionProduct] + $0 }
        )
        return (
            "Subscriber in billing grace period (tables receipt_subscriptions, receipt_entitlements; events "
                + subscriber.events.joined(separator: ", ") + ")\n" + table.render(),
            expected
        )
    }
}
