import AppStoreClient
import AppStoreSignedData
import ConsoleOutput
import FakeAppStore
import Foundation
import PostgresClient
import ReceiptQueue

/// The demo's lost order (issue 37): the API layer records an order before the purchase sheet opens
/// (`expect_purchase()`, with the appAccountToken it gives StoreKit), the customer pays, and the app dies before it
/// sends anything. Apple's ONE_TIME_CHARGE notification, carrying the token, completes the order: the API layer
/// delivers it like any other verdict.
extension DemoRun {
    static let lostOrderProduct = "coins.100"

    /// The order Apple's word verified, and what the demo saw of it.
    struct LostOrder {
        var job: (order: DemoOrder, id: Int64)
        /// The order's state before the notification, and after.
        var before: String
        var after: String
        /// What brought the purchase (`result.source`), and the event written.
        var source: String
        var event: String

        var expected: Bool {
            before == "queued" && after == "verified" && source == "notification" && event == "credited"
        }
    }

    func lostOrder(
        tag: String, signer: JWSSigner, client: AppStoreClient, signedData: SignedDataVerifier,
        connection: PostgresConnection, progress: inout DemoProgress
    ) throws -> LostOrder {
        let userId = "paula"
        let token = UUID().uuidString.lowercased()
        let nowMs = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let transactionId = String(nowMs * 10 + 8_000_000)
        let order = DemoOrder(
            orderId: "order-\(tag)\(DemoScenarios.lostOrderNumber)", scenario: "app died; Apple told us",
            userId: userId, productId: Self.lostOrderProduct, transactionId: nil, receipt: "", phase: 5,
            expected: .init(state: "verified", environment: "Production")
        )
        // The API layer, before the purchase sheet opens: the order, and the token it hands to StoreKit.
        let created = try connection.query(
            "SELECT expect_purchase($1, $2, $3, $4::uuid, $5) AS id",
            [order.orderId, userId, Self.lostOrderProduct, token, DemoScenarios.app]
        )
        guard let id = created.int64(0, "id") else {
            throw DemoError(.unexpectedVerdicts, "expect_purchase returned no job for \(order.orderId)")
        }
        let before = try connection.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)])[0, "state"] ?? ""
        _ = try connection.query(
            "UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = $2",
            [String(Self.appAppleId), DemoScenarios.app]
        )
        // The customer paid; the app died before it sent anything. Apple's notification, with the token inside.
        let transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": DemoScenarios.app,
            "productId": Self.lostOrderProduct, "quantity": 1, "purchaseDate": nowMs - 1_000, "signedDate": nowMs,
            "type": "Consumable", "environment": "Production", "inAppOwnershipType": "PURCHASED",
            "transactionReason": "PURCHASE", "price": 990, "currency": "USD", "storefront": "USA",
            "appAccountToken": token,
        ]
        let notification: [String: Any] = [
            "notificationType": "ONE_TIME_CHARGE", "notificationUUID": UUID().uuidString, "version": "2.0",
            "signedDate": nowMs,
            "data": [
                "bundleId": DemoScenarios.app, "environment": "Production", "appAppleId": Self.appAppleId,
                "signedTransactionInfo": try signer.sign(
                    JSONSerialization.data(withJSONObject: transaction, options: .sortedKeys)
                ),
            ] as [String: Any],
        ]
        _ = try NotificationInbox(connection: connection).receive(
            try signer.sign(JSONSerialization.data(withJSONObject: notification, options: .sortedKeys)), source: .sql
        )
        try drain([id], client: client, signedData: signedData, connection: connection, progress: &progress)
        let row = try connection.query(
            """
            SELECT j.state, coalesce(j.result->>'source', '-') AS source,
                   coalesce((SELECT e.kind FROM receipt_events e WHERE e.job_id = j.id ORDER BY e.id LIMIT 1), '-') AS event
            FROM receipt_jobs j WHERE j.id = $1
            """,
            [String(id)]
        )
        return LostOrder(
            job: (order, id), before: before, after: row[0, "state"] ?? "", source: row[0, "source"] ?? "",
            event: row[0, "event"] ?? ""
        )
    }

    /// The lost order, for the report: the order as the API layer saw it before and after Apple's word.
    static func lostOrderReport(_ lost: LostOrder) -> (text: String, expected: Bool) {
        let table = TextTable(
            ["order", "user", "product", "before the notification", "after", "brought by", "event"],
            [[lost.job.order.orderId, lost.job.order.userId, lost.job.order.productId, lost.before, lost.after,
              lost.source, lost.event]]
        )
        return ("Lost order (expect_purchase, then Apple's ONE_TIME_CHARGE; the app never sent it)\n" + table.render(),
                lost.expected)
    }
}
