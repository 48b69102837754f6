import AppStoreModel
import AppStoreSignedData
import Foundation
import LoopbackHTTP
import Testing

@testable import FakeAppStore

/// The fake's Set App Account Token with requests made here (the client refuses bad ids and tokens before sending):
/// Apple's error for each thing it refuses, and the token on the chain once it answers 200.
@Suite("Fake App Store: Set App Account Token")
struct SetAccountTokenFakeTests {
    static let bundle = "com.example.app"
    static let token = "7389a31a-fb6d-4569-a2a6-db7d85d84813"

    static func body(_ value: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: ["appAccountToken": value])) ?? Data()
    }

    @Test("200 sets the token on every transaction of the chain; 4000008, 4000000, 4000183, 4040010, 4000187 refuse")
    func answers() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "club.monthly", type: "Auto-Renewable Subscription",
                             expiresDate: Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000),
                FakePurchase(environment: "Sandbox", bundleId: Self.bundle, productId: "coins.100"),
            ])
            let chain = added[0].transactionId
            try server.purchases.renew(originalTransactionId: chain)
            let renewal = try #require(server.purchases.purchases.last?.transactionId)
            func put(_ id: String, _ body: Data, sandbox: Bool = false) throws -> LoopbackHTTPClient.Response {
                try client.api(
                    "PUT", (sandbox ? "/sandbox" : "") + "/inApps/v1/transactions/\(id)/appAccountToken", token, body: body
                )
            }
            func code(_ response: LoopbackHTTPClient.Response) throws -> Int? {
                try response.json(ServerAPIErrorPayload.self).errorCode
            }
            let badId = try put("12a", Self.body(Self.token))
            #expect(badId.status == 400)
            #expect(try code(badId) == 4000008)
            #expect(try code(try put(chain, Data("{}".utf8))) == 4000000)
            #expect(try code(try put(chain, Self.body(42))) == 4000000)
            let notUUID = try put(chain, Self.body("not-a-uuid"))
            #expect(notUUID.status == 400)
            #expect(try code(notUUID) == 4000183)
            let unknown = try put("9999999999999999", Self.body(Self.token))
            #expect(unknown.status == 404)
            #expect(try code(unknown) == 4040010)
            #expect(try code(try put(added[1].transactionId, Self.body(Self.token))) == 4040010, "sandbox's, in production")
            #expect(try code(try put(renewal, Self.body(Self.token))) == 4000187)
            #expect(server.purchases.purchases.allSatisfy { $0.purchase.appAccountToken == nil })

            let set = try put(chain, Self.body(Self.token.uppercased()))
            #expect(set.status == 200)
            #expect(set.body.isEmpty)
            let chainPurchases = server.purchases.purchases.filter { $0.originalTransactionId == chain }
            #expect(chainPurchases.count == 2)
            #expect(chainPurchases.allSatisfy { $0.purchase.appAccountToken == Self.token })
            // Re-signed: the signed transaction Get Transaction Info serves names the token.
            for purchase in chainPurchases {
                let payload = purchase.signedTransaction.split(separator: ".").dropFirst().first
                    .flatMap { Base64URL.decode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
                #expect(payload.contains("\"appAccountToken\":\"\(Self.token)\""), "\(payload)")
            }
            #expect(server.purchases.purchases.first { $0.originalTransactionId != chain }?.purchase.appAccountToken == nil)
            #expect(try put(added[1].transactionId, Self.body(Self.token), sandbox: true).status == 200)
            // A renewal after it carries the token too.
            try server.purchases.renew(originalTransactionId: chain)
            #expect(server.purchases.purchases.last?.purchase.appAccountToken == Self.token)
            #expect(server.apiStats().count("production.set_app_account_token", "200") == 1)
        }
    }
}
