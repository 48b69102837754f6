import AppStoreClient
import AppleFixtureFiles
import Foundation
import ReceiptRules
import Testing

/// `AppStoreClient.interpret` on Apple's real verifyReceipt answer (RevenueCat's sandbox receipt).
@Suite("interpret: Apple's real sandbox answer")
struct InterpretRealResponseTests {
    @Test("status 0 from the sandbox: the receipt, every entry of in_app and latest_receipt_info", .needsAppleFixtures)
    func realSandboxAnswer() throws {
        let body = try AppleFixtures.sandboxResponse()
        let step = AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: body, endpoint: .sandbox)
        let (contents, status) = try #require(step.receipt, "expected a receipt, got \(step)")

        #expect(status == 0)
        #expect(contents.environment == .sandbox)
        #expect(contents.bundleId == "com.revenuecat.sampleapp")
        #expect(contents.entries.count == 18)  // 9 in_app + 9 latest_receipt_info, unmerged
    }

    @Test("every entry matches what Foundation reads from the same JSON, in_app first", .needsAppleFixtures)
    func entriesMatchTheJSON() throws {
        let json = try AppleFixtures.sandboxResponseObject()
        let receiptJSON = try #require(json["receipt"] as? [String: Any])
        let inApp = try #require(receiptJSON["in_app"] as? [[String: Any]])
        let latest = try #require(json["latest_receipt_info"] as? [[String: Any]])
        #expect(inApp.count == 9)
        #expect(latest.count == 9)

        let step = AppStoreClient.interpret(
            httpStatus: 200, retryAfter: nil, body: try AppleFixtures.sandboxResponse(), endpoint: .sandbox
        )
        let contents = try #require(step.receipt).contents
        try #require(contents.entries.count == inApp.count + latest.count)

        for (entry, purchase) in zip(inApp + latest, contents.entries) {
            #expect(purchase.transactionId == entry["transaction_id"] as? String)
            #expect(purchase.originalTransactionId == entry["original_transaction_id"] as? String)
            #expect(purchase.webOrderLineItemId == entry["web_order_line_item_id"] as? String)
            #expect(purchase.productId == entry["product_id"] as? String)
            #expect(purchase.quantity == Int(try #require(entry["quantity"] as? String)))
            #expect(purchase.purchaseDateMs == Int64(try #require(entry["purchase_date_ms"] as? String)))
            #expect(purchase.expiresDateMs == Int64(try #require(entry["expires_date_ms"] as? String)))
            #expect(purchase.cancellationDateMs == nil)
            #expect(purchase.isSubscription)
        }
        #expect(Set(contents.entries.map(\.productId)) == [
            "com.revenuecat.monthly_4.99.1_week_intro", "com.revenuecat.annual_39.99.2_week_intro",
        ])
        #expect(Set(contents.entries.map(\.originalTransactionId)) == ["1000000692878476"])
    }

    @Test("one entry, field by field (dates from the _ms fields)", .needsAppleFixtures)
    func oneEntry() throws {
        let step = AppStoreClient.interpret(
            httpStatus: 200, retryAfter: nil, body: try AppleFixtures.sandboxResponse(), endpoint: .sandbox
        )
        let contents = try #require(step.receipt).contents
        let purchase = try #require(contents.entries.first { $0.transactionId == "1000000692879214" })
        #expect(purchase == Purchase(
            transactionId: "1000000692879214",
            originalTransactionId: "1000000692878476",
            webOrderLineItemId: "1000000054042695",
            productId: "com.revenuecat.monthly_4.99.1_week_intro",
            quantity: 1,
            purchaseDateMs: 1_594_755_400_000,
            expiresDateMs: 1_594_755_700_000
        ))
    }

    /// The environment is the endpoint's that answered, per request; nothing in the body or shared state decides it.
    @Test("the environment comes from the endpoint that answered", .needsAppleFixtures, arguments: [
        (AppStoreEndpoint.production, PurchaseEnvironment.production),
        (AppStoreEndpoint.sandbox, PurchaseEnvironment.sandbox),
    ])
    func environmentFromEndpoint(endpoint: AppStoreEndpoint, environment: PurchaseEnvironment) throws {
        let step = AppStoreClient.interpret(
            httpStatus: 200, retryAfter: nil, body: try AppleFixtures.sandboxResponse(), endpoint: endpoint
        )
        #expect(try #require(step.receipt).contents.environment == environment)
    }

    @Test("the real answer cut in half: retryable, unreadable body", .needsAppleFixtures)
    func truncated() throws {
        let body = try AppleFixtures.sandboxResponse()
        let half = Array(body.prefix(body.count / 2))
        let step = AppStoreClient.interpret(httpStatus: 200, retryAfter: nil, body: half, endpoint: .production)
        let failure = try #require(step.retryable, "expected retryable, got \(step)")
        #expect(failure.cause == .unreadableBody)
        #expect(failure.appleStatus == nil)
        #expect(failure.httpStatus == nil)
        #expect(failure.endpoint == .production)
        #expect(failure.message.contains("\(half.count) bytes"))
    }

    @Test(
        "the real answer with its status changed: 21007 redirects to the sandbox, 21008 to production",
        .needsAppleFixtures
    )
    func realAnswerWithRedirectStatus() throws {
        let text = try #require(String(bytes: try AppleFixtures.sandboxResponse(), encoding: .utf8))
        try #require(text.contains("\"status\": 0") || text.contains("\"status\":0"))
        for (status, target) in [(21007, AppStoreEndpoint.sandbox), (21008, .production)] {
            let changed = text.replacingOccurrences(of: "\"status\": 0", with: "\"status\": \(status)")
                .replacingOccurrences(of: "\"status\":0", with: "\"status\":\(status)")
            let redirect = try #require(interpretJSON(changed, endpoint: .production).redirect)
            #expect(redirect.endpoint == target)
            #expect(redirect.status == status)
        }
    }
}
