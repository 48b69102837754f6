import AppStoreClient
import AppStoreSignedData
import ConsoleOutput
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Workers

/// The demo's refund request (issue 24): Apple asks, with a CONSUMPTION_REQUEST notification, whether to refund a
/// StoreKit 2 purchase the demo credited; the customer consented, used it all, and the product's policy declines;
/// the worker answers the fake App Store with Send Consumption Information.
extension DemoRun {
    /// The made-up App Store id production notifications carry for the demo's app.
    static let appAppleId: Int64 = 1_234_567_890

    /// What was asked and answered, for the report.
    struct RefundRequest {
        var transactionId: String
        var userId: String
        var productId: String
        var state: String
        var answer: String
        /// The body the fake App Store received, if any.
        var received: [String]
    }

    /// Sends the refund request for `order` (credited in phase 1) and runs a worker until it is answered.
    func answerRefundRequest(
        for order: (order: DemoOrder, id: Int64), signer: JWSSigner, fake: FakeAppStoreServer, client: AppStoreClient,
        signedData: SignedDataVerifier, connection: PostgresConnection
    ) throws -> RefundRequest {
        let credit = try connection.query(
            "SELECT transaction_id, user_id, product_id FROM receipt_transactions WHERE job_id = $1", [String(order.id)]
        )
        guard let transactionId = credit[0, "transaction_id"], let userId = credit[0, "user_id"],
            let productId = credit[0, "product_id"]
        else { throw DemoError(.unexpectedVerdicts, "order \(order.order.orderId) credited nothing to refund") }
        // What the API layer and the company's settings say: the verdict was delivered, the customer consented and
        // used it all, and this product's refund requests are declined.
        _ = try connection.query("SELECT mark_verdict_delivered($1)", [String(order.id)])
        _ = try connection.query("SELECT set_customer_consent($1, true)", [userId])
        _ = try connection.query("SELECT record_consumption($1, 100000)", [transactionId])
        _ = try connection.query(
            """
            INSERT INTO receipt_products (product_id, kind, refund_preference) VALUES ($1, 'consumable', 'decline')
            ON CONFLICT (product_id) DO UPDATE SET refund_preference = 'decline'
            """,
            [productId]
        )
        _ = try connection.query(
            "UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = $2", [String(Self.appAppleId), order.order.bundleId]
        )
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let notification: [String: Any] = [
            "notificationType": "CONSUMPTION_REQUEST", "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": now,
            "data": [
                "bundleId": order.order.bundleId, "environment": "Production", "appAppleId": Self.appAppleId,
                "signedTransactionInfo": order.order.receipt, "consumptionRequestReason": "UNINTENDED_PURCHASE",
            ] as [String: Any],
        ]
        let payload = try signer.sign(JSONSerialization.data(withJSONObject: notification, options: .sortedKeys))
        _ = try NotificationInbox(connection: connection).receive(payload, source: .sql)

        var configuration = WorkerConfiguration(
            workerId: "demo-\(getpid())-refunds", maxInFlight: 8, leaseSeconds: 10, pollIntervalSeconds: 0.05,
            retry: Self.retry, rules: .init(bundleIds: Set(Self.apps)), schedulerIntervalSeconds: 0.1,
            shutdownGraceSeconds: 2
        )
        // The demo does not wait the hour the API layer normally has to answer first.
        configuration.consumptionAnswerAfterMinutes = 0
        configuration.refundRequestIntervalSeconds = 0.2
        var logger = Logger(label: "receipt-worker.demo")
        logger.logLevel = .warning
        let worker = Worker(
            configuration: configuration, databaseURL: environment.databaseURL, client: client,
            signedData: signedData, serverAPI: try environment.serverAPIClient(), logger: logger
        )
        let thread = try WorkerThread(worker)
        defer { _ = thread.stop(waitingUpTo: configuration.shutdownGraceSeconds + 10) }
        let deadline = Date(timeIntervalSinceNow: options.timeoutSeconds)
        func request() throws -> PostgresResult {
            try connection.query(
                "SELECT state, coalesce(answer::text, '-') AS answer FROM receipt_refund_requests WHERE transaction_id = $1",
                [transactionId]
            )
        }
        while try request()[0, "state"].map({ $0 == "pending" }) ?? true, Date() < deadline,
            !stopRequested.withLock({ $0 })
        {
            if let error = thread.error { throw DemoError(.worker, "the worker stopped: \(error)") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let row = try request()
        return RefundRequest(
            transactionId: transactionId, userId: userId, productId: productId, state: row[0, "state"] ?? "none",
            answer: row[0, "answer"] ?? "-",
            received: fake.consumptionAnswers().filter { $0.transactionId == transactionId }.map(\.body)
        )
    }

    /// The refund request as a table, and whether it went as the demo expects: answered, and what Apple received
    /// is exactly the recorded answer.
    static func refundReport(_ request: RefundRequest) -> (text: String, expected: Bool) {
        let answer = (try? JSONSerialization.jsonObject(with: Data(request.answer.utf8))) as? [String: Any] ?? [:]
        let sent = (request.received.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) })
            as? NSDictionary
        let expected = request.state == "answered" && request.received.count == 1
            && sent == (answer as NSDictionary)
        let table = TextTable(
            ["transaction", "user", "product", "state", "deliveryStatus", "refundPreference", "consumption",
             "Apple received"],
            [[
                request.transactionId, request.userId, request.productId, request.state,
                answer["deliveryStatus"] as? String ?? "-", answer["refundPreference"] as? String ?? "-",
                (answer["consumptionPercentage"] as? Int).map { "\($0 / 1000)%" } ?? "-",
                request.received.isEmpty
                    ? "nothing" : expected ? "the answer, as recorded" : "\(request.received.count), not as recorded",
            ]]
        )
        return (
            "Refund request (table receipt_refund_requests; the PUT the fake App Store received)\n" + table.render(),
            expected
        )
    }
}
