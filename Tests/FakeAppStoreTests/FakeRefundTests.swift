import AppStoreSignedData
import Foundation
import Testing

@testable import FakeAppStore

/// The fake App Store's side of refunds and revenue (issue 24): purchases priced per storefront, a refund request
/// (CONSUMPTION_REQUEST) followed by Apple's decision, and the consumption answers it received on its /fake/ routes.
@Suite("Fake App Store: refunds and prices")
struct FakeRefundTests {
    static let bundle = "com.example.app"

    static func transaction(_ server: FakeAppStoreServer, _ jws: String) throws -> SignedTransaction {
        try SignedTransaction(payload: try ServerAPIFakeTests.verifier(server).verify(jws).payload)
    }

    @Test("a purchase is priced in its storefront's currency: base price × the storefront's multiplier, to its step")
    func storefrontPrices() throws {
        try withAPIServer { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "coins.100"),
                FakePurchase(bundleId: Self.bundle, productId: "coins.100", storefront: "JPN", basePrice: 1_990),
                FakePurchase(bundleId: Self.bundle, productId: "coins.100", storefront: "GBR", basePrice: 1_990),
            ])
            let prices = try added.map { purchase in
                let transaction = try Self.transaction(server, purchase.signedTransaction)
                return "\(transaction.storefront ?? "-") \(transaction.currency ?? "-") \(transaction.price ?? -1)"
            }
            #expect(prices == ["USA USD 990", "JPN JPY 299000", "GBR GBP 1590"])

            // A renewal keeps its storefront and price.
            let subscription = try server.purchases.add([
                FakePurchase(
                    bundleId: Self.bundle, productId: "pro", type: "Auto-Renewable Subscription",
                    purchaseDate: 1_760_000_000_000, expiresDate: 1_762_592_000_000, storefront: "CHN",
                    basePrice: 4_990
                ),
            ])
            let renewal = try server.purchases.renew(originalTransactionId: subscription[0].transactionId)
            let renewed = try #require(
                server.purchases.purchases.last { $0.originalTransactionId == subscription[0].transactionId }
            )
            #expect(renewed.transactionId != subscription[0].transactionId)
            let transaction = try Self.transaction(server, renewed.signedTransaction)
            #expect(transaction.price == 35_000)
            #expect(transaction.currency == "CNY")
            #expect(renewal.notificationType == "DID_RENEW")

            // Over the admin route too; an unknown storefront is refused, naming the known ones.
            let body = Data(
                #"{"purchases": [{"bundleId": "com.example.app", "productId": "p", "storefront": "DEU", "basePrice": 1000}]}"#
                    .utf8
            )
            let response = try client.request("POST", "/fake/transactions", body: body)
            #expect(response.status == 200)
            let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
            let jws = try #require((object?["purchases"] as? [[String: Any]])?.first?["signedTransaction"] as? String)
            #expect(try Self.transaction(server, jws).price == 900)
            #expect(try Self.transaction(server, jws).currency == "EUR")
            let unknown = try client.request(
                "POST", "/fake/transactions",
                body: Data(#"{"purchases": [{"bundleId": "x", "productId": "p", "storefront": "XXX"}]}"#.utf8)
            )
            #expect(unknown.status == 400)
            #expect(unknown.text.contains("USA, GBR, DEU, JPN, CHN"), "\(unknown.text)")
            #expect(throws: FakeAppStoreError.self) {
                try server.purchases.add([FakePurchase(bundleId: "x", productId: "p", basePrice: -1)])
            }
        }
    }

    @Test("a refund request, then Apple's decision: CONSUMPTION_REQUEST, then REFUND or REFUND_DECLINED")
    func refundRequestThenDecision() throws {
        try withAPIServer { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "coins.100"),
                FakePurchase(bundleId: Self.bundle, productId: "coins.100"),
            ])
            func post(_ body: [String: Any]) throws -> [String: Any] {
                let response = try client.request(
                    "POST", "/fake/notifications", body: try JSONSerialization.data(withJSONObject: body)
                )
                #expect(response.status == 200, "\(response.text)")
                return try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
            }
            let verifier = try ServerAPIFakeTests.verifier(server)
            for (purchase, decision) in zip(added, [["event": "refund"], ["notificationType": "REFUND_DECLINED"]]) {
                let request = try post([
                    "notificationType": "CONSUMPTION_REQUEST", "transactionId": purchase.transactionId,
                    "consumptionRequestReason": "UNINTENDED_PURCHASE",
                ])
                let asked = try verifier.verifyNotification(try #require(request["signedPayload"] as? String))
                #expect(asked.notificationType == "CONSUMPTION_REQUEST")
                #expect(asked.transaction?.transactionId == purchase.transactionId)
                let decided = try post(decision.merging(["transactionId": purchase.transactionId]) { $1 })
                let answer = try verifier.verifyNotification(try #require(decided["signedPayload"] as? String))
                #expect(answer.transaction?.transactionId == purchase.transactionId)
                #expect(answer.notificationType == (decision["event"] == nil ? "REFUND_DECLINED" : "REFUND"))
                #expect((answer.transaction?.revocationDateMs != nil) == (decision["event"] != nil))
            }
            #expect(server.purchases.notifications.map(\.notificationType).suffix(4) == [
                "CONSUMPTION_REQUEST", "REFUND", "CONSUMPTION_REQUEST", "REFUND_DECLINED",
            ])
        }
    }

    @Test("GET /fake/consumption-answers lists the Send Consumption Information requests received, bodies as sent")
    func consumptionAnswersRoute() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "coins.100")])
            let empty = try client.request("GET", "/fake/consumption-answers")
            #expect(empty.status == 200)
            #expect(empty.text == #"{"answers":[]}"#)
            let body = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE"}"#
            let put = try client.api(
                "PUT", "/inApps/v2/transactions/consumption/\(added[0].transactionId)", token, body: Data(body.utf8)
            )
            #expect(put.status == 202, "\(put.text)")
            let listed = try client.request("GET", "/fake/consumption-answers")
            let object = try JSONSerialization.jsonObject(with: listed.body) as? [String: Any]
            let answers = try #require(object?["answers"] as? [[String: Any]])
            #expect(answers.count == 1)
            #expect(answers.first?["transactionId"] as? String == added[0].transactionId)
            #expect(answers.first?["environment"] as? String == "Production")
            #expect(answers.first?["body"] as? String == body)
        }
    }
}
