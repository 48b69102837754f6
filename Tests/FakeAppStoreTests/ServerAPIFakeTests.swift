import AppStoreModel
import AppStoreSignedData
import LoopbackHTTP
import Crypto
import Foundation
import Testing
import X509

@testable import FakeAppStore

/// A JWT made here, by this test's own code, so that the fake's check is tested without the client.
struct TestToken {
    var key = P256.Signing.PrivateKey()
    var kid = "KEY1234567"
    var header: [String: Any] = ["alg": "ES256", "typ": "JWT"]
    var claims: [String: Any]

    init(bundleId: String = "com.example.app", issuedAt: Int = Int(Date().timeIntervalSince1970), lifetime: Int = 600) {
        claims = [
            "iss": "issuer", "iat": issuedAt, "exp": issuedAt + lifetime, "aud": "appstoreconnect-v1", "bid": bundleId,
        ]
    }

    var text: String {
        var header = header
        header["kid"] = kid
        let input = Base64URL.encode(Self.json(header)) + "." + Base64URL.encode(Self.json(claims))
        let signature = (try? key.signature(for: Data(input.utf8)))?.rawRepresentation ?? Data()
        return input + "." + Base64URL.encode(signature)
    }

    var authorization: (String, String) { ("Authorization", "Bearer \(text)") }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}

/// Starts a fake that accepts `token`'s key, for one test body.
func withAPIServer<T>(
    _ token: TestToken = TestToken(),
    change: (inout FakeAppStoreConfiguration) -> Void = { _ in },
    _ body: (FakeAppStoreServer, LoopbackHTTPClient) throws -> T
) throws -> T {
    var configuration = FakeAppStoreConfiguration(threads: 1, apiKeys: [token.kid: token.key.publicKey])
    change(&configuration)
    let server = try FakeAppStoreServer.start(configuration)
    defer { server.stop() }
    return try body(server, try LoopbackHTTPClient(port: server.port))
}

extension LoopbackHTTPClient {
    func api(_ method: String, _ path: String, _ token: TestToken, body: Data = Data()) throws -> Response {
        try request(method, path, body: body, headers: [token.authorization])
    }
}

@Suite("Fake App Store: App Store Server API")
struct ServerAPIFakeTests {
    static let bundle = "com.example.app"

    static func verifier(_ server: FakeAppStoreServer) throws -> SignedDataVerifier {
        let root = try Certificate(derEncoded: try server.rootCertificateDER())
        return SignedDataVerifier(configuration: .init(rootCertificates: [root], onlineChecks: false))
    }

    @Test("POST /fake/transactions adds purchases and answers their JWS, which verifies under the fake's root")
    func adminAdd() throws {
        try withAPIServer { server, client in
            let body = Data(
                #"""
                {"purchases": [
                  {"bundleId": "com.example.app", "productId": "coins.100", "orderId": "MK5TTTVWJH",
                   "appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138", "purchaseDate": 1700000000000},
                  {"environment": "Sandbox", "bundleId": "com.example.app", "productId": "pro.monthly",
                   "type": "Auto-Renewable Subscription", "transactionId": "42", "expiresDate": 1800000000000}
                ]}
                """#.utf8
            )
            let response = try client.request("POST", "/fake/transactions", body: body)
            #expect(response.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            let purchases = try #require(object["purchases"] as? [[String: Any]])
            #expect(purchases.count == 2)
            let first = try #require(purchases.first)
            let transactionId = try #require(first["transactionId"] as? String)
            #expect(transactionId.count == 16)
            #expect(first["originalTransactionId"] as? String == transactionId)
            let verified = try Self.verifier(server).verify(try #require(first["signedTransaction"] as? String))
            let transaction = try SignedTransaction(payload: verified.payload)
            #expect(transaction.transactionId == transactionId)
            #expect(transaction.bundleId == Self.bundle)
            #expect(transaction.productId == "coins.100")
            #expect(transaction.purchaseDateMs == 1_700_000_000_000)
            #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
            #expect(transaction.environment == "Production")
            #expect(transaction.type == "Consumable")
            #expect(transaction.transactionReason == "PURCHASE")
            let sandboxJWS = try #require(purchases[1]["signedTransaction"] as? String)
            let sandbox = try SignedTransaction(payload: try Self.verifier(server).verify(sandboxJWS).payload)
            #expect(sandbox.environment == "Sandbox")
            #expect(sandbox.transactionId == "42")
            #expect(sandbox.expiresDateMs == 1_800_000_000_000)
            #expect(server.purchases.purchases.count == 2)

            let missing = Data(#"{"purchases": [{"bundleId": "x"}]}"#.utf8)
            let bad = try client.request("POST", "/fake/transactions", body: missing)
            #expect(bad.status == 400)
            let duplicate = try client.request(
                "POST", "/fake/transactions",
                body: Data(#"{"purchases": [{"bundleId": "x", "productId": "p", "transactionId": "42"}]}"#.utf8)
            )
            #expect(duplicate.status == 400)
            #expect(duplicate.text.contains("already held"))
            #expect(server.purchases.purchases.count == 2)
        }
    }

    @Test("Get Transaction Info: found in its environment, 4040010 elsewhere and for another app, 4000006 for bad ids")
    func transactionInfo() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "a"),
                FakePurchase(environment: "Sandbox", bundleId: Self.bundle, productId: "b"),
                FakePurchase(bundleId: "com.example.other", productId: "c"),
            ])
            let production = try client.api("GET", "/inApps/v1/transactions/\(added[0].transactionId)", token)
            #expect(production.status == 200)
            let info = try production.json(TransactionInfoResponse.self)
            #expect(info.signedTransactionInfo == added[0].signedTransaction)

            let sandboxOnly = try client.api("GET", "/inApps/v1/transactions/\(added[1].transactionId)", token)
            #expect(sandboxOnly.status == 404)
            #expect(try sandboxOnly.json(ServerAPIErrorPayload.self).errorCode == 4040010)
            let inSandbox = try client.api("GET", "/sandbox/inApps/v1/transactions/\(added[1].transactionId)", token)
            let sandboxInfo = try inSandbox.json(TransactionInfoResponse.self)
            #expect(sandboxInfo.signedTransactionInfo == added[1].signedTransaction)

            let otherApp = try client.api("GET", "/inApps/v1/transactions/\(added[2].transactionId)", token)
            #expect(try otherApp.json(ServerAPIErrorPayload.self).errorCode == 4040010)
            let badId = try client.api("GET", "/inApps/v1/transactions/12a", token)
            #expect(badId.status == 400)
            #expect(try badId.json(ServerAPIErrorPayload.self).errorCode == 4000006)

            let stats = server.apiStats()
            #expect(stats.count("production.transaction_info", "200") == 1)
            #expect(stats.count("production.transaction_info", "4040010") == 2)
            #expect(stats.count("sandbox.transaction_info", "200") == 1)
        }
    }

    @Test("tokens: a wrong key, kid, audience, an expired or too long-lived token, no bid: 401 with the reason")
    func tokens() throws {
        let good = TestToken()
        var wrongKey = good
        wrongKey.key = P256.Signing.PrivateKey()
        var wrongKid = good
        wrongKid.kid = "OTHER"
        var wrongAudience = good
        wrongAudience.claims["aud"] = "appstoreconnect-v2"
        let now = Int(Date().timeIntervalSince1970)
        var expired = good
        (expired.claims["iat"], expired.claims["exp"]) = (now - 700, now - 100)
        var tooLong = good
        tooLong.claims["exp"] = now + 3601
        var noBid = good
        noBid.claims["bid"] = nil
        var wrongAlg = good
        wrongAlg.header["alg"] = "HS256"
        try withAPIServer(good) { server, client in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "a")])
            let path = "/inApps/v1/transactions/\(added[0].transactionId)"
            let refused = [
                (wrongKey, "signature"), (wrongKid, "unknown key id"), (wrongAudience, "aud"), (expired, "expired"),
                (tooLong, "60 minutes"), (noBid, "bid"), (wrongAlg, "ES256"),
            ]
            for (token, reason) in refused {
                let response = try client.api("GET", path, token)
                #expect(response.status == 401, "\(reason)")
                #expect(response.headers["x-fake-appstore-reason"]?.contains(reason) == true, "\(response.headers)")
                #expect(response.body.isEmpty)
            }
            #expect(try client.request("GET", path).status == 401)
            #expect(try client.api("GET", path, good).status == 200)
            #expect(server.apiStats().count("production.transaction_info", "401") == refused.count + 1)
        }
    }

    @Test("History v2: one customer's purchases in pages of two, following revision, in the purchase's environment")
    func history() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let subscription = "Auto-Renewable Subscription"
            let first = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "sub", type: subscription),
            ])[0]
            var renewals: [FakePurchase] = (0..<3).map { _ in
                FakePurchase(
                    bundleId: Self.bundle, productId: "sub", originalTransactionId: first.transactionId,
                    type: subscription
                )
            }
            renewals.append(FakePurchase(bundleId: Self.bundle, productId: "coins", customerId: first.customerId))
            renewals.append(FakePurchase(bundleId: Self.bundle, productId: "someone else's"))
            let added = try server.purchases.add(renewals)
            var collected: [String] = []
            var revision: String?
            var pages = 0
            repeat {
                let query = revision.map { "?revision=\($0)" } ?? ""
                let response = try client.api("GET", "/inApps/v2/history/\(added[1].transactionId)\(query)", token)
                #expect(response.status == 200)
                let page = try response.json(TransactionHistoryResponse.self)
                #expect(page.bundleId == Self.bundle)
                #expect(page.environment == "Production")
                #expect((page.signedTransactions?.count ?? 0) <= 2)
                collected += page.signedTransactions ?? []
                revision = page.revision
                pages += 1
                if page.hasMore != true { break }
            } while pages < 10
            #expect(pages == 3)
            #expect(collected == [first.signedTransaction] + added.prefix(4).map(\.signedTransaction))
            let renewalPayload = try Self.verifier(server).verify(added[0].signedTransaction).payload
            let renewal = try SignedTransaction(payload: renewalPayload)
            #expect(renewal.originalTransactionId == first.transactionId)
            #expect(renewal.transactionReason == "RENEWAL")

            let badRevision = try client.api("GET", "/inApps/v2/history/\(first.transactionId)?revision=nope", token)
            #expect(try badRevision.json(ServerAPIErrorPayload.self).errorCode == 4000005)
            let sandbox = try client.api("GET", "/sandbox/inApps/v2/history/\(first.transactionId)", token)
            #expect(try sandbox.json(ServerAPIErrorPayload.self).errorCode == 4040010)
        }
    }

    @Test("History v2 as Apple filters it: productId (repeatable), startDate and endDate on the purchase date, sort on the last change, a revision bound to its query")
    func historyQuery() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let hour: Int64 = 3_600_000
            // Oldest first: a, b, c, d (products x, y, x, z), an hour apart.
            let added = try server.purchases.add(
                ["x", "y", "x", "z"].enumerated().map { index, product in
                    FakePurchase(
                        bundleId: Self.bundle, productId: product, customerId: "c",
                        purchaseDate: now - Int64(4 - index) * hour
                    )
                }
            )
            func ids(_ query: String) throws -> (ids: [String], page: TransactionHistoryResponse) {
                let response = try client.api("GET", "/inApps/v2/history/\(added[0].transactionId)\(query)", token)
                #expect(response.status == 200, "\(query): \(response.status)")
                let page = try response.json(TransactionHistoryResponse.self)
                let ids = try (page.signedTransactions ?? []).map {
                    try SignedTransaction(payload: try Self.verifier(server).verify($0).payload).transactionId ?? "?"
                }
                return (ids, page)
            }
            let id = added.map(\.transactionId)
            #expect(try ids("").ids == [id[0], id[1]], "ascending by default, two a page")
            let newest = try ids("?sort=DESCENDING")
            #expect(newest.ids == [id[3], id[2]])
            #expect(try ids("?sort=DESCENDING&revision=\(newest.page.revision ?? "")").ids == [id[1], id[0]])
            #expect(try ids("?productId=x&productId=z&sort=DESCENDING").ids == [id[3], id[2]])
            #expect(try ids("?productId=x").ids == [id[0], id[2]])
            #expect(try ids("?startDate=\(now - 2 * hour)").ids == [id[2], id[3]], "purchased at or after startDate")
            #expect(try ids("?endDate=\(now - 3 * hour)").ids == [id[0]], "purchased before endDate")

            // A refund is a change: the refunded purchase is now the most recently modified.
            try server.purchases.refund(transactionId: id[0])
            #expect(try ids("?sort=DESCENDING").ids == [id[0], id[3]])

            // The revision belongs to its query: the next page asked without the filters is refused (4000005).
            let filtered = try ids("?productId=x&productId=y")
            #expect(filtered.page.hasMore == true)
            let dropped = try client.api(
                "GET", "/inApps/v2/history/\(id[0])?revision=\(filtered.page.revision ?? "")", token
            )
            #expect(try dropped.json(ServerAPIErrorPayload.self).errorCode == 4000005)
            #expect(try ids("?productId=y&productId=x&revision=\(filtered.page.revision ?? "")").ids == [id[0]])

            for (query, code) in [
                ("?sort=NEWEST", 4000021), ("?productId=", 4000023), ("?startDate=yesterday", 4000015),
                ("?endDate=-1", 4000016), ("?startDate=\(now)&endDate=\(now)", 4000013), ("?revoked=true", 4000000),
            ] {
                let refused = try client.api("GET", "/inApps/v2/history/\(id[0])\(query)", token)
                #expect(try refused.json(ServerAPIErrorPayload.self).errorCode == code, "\(query)")
            }
        }
    }

    @Test("Look Up Order ID: status 0 with the order's transactions, status 1 for an unknown order; ids are decoded")
    func orderLookup() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "a", orderId: "MK5T/TVWJH"),
                FakePurchase(bundleId: Self.bundle, productId: "b", orderId: "MK5T/TVWJH"),
                FakePurchase(environment: "Sandbox", bundleId: Self.bundle, productId: "c", orderId: "SANDBOX1"),
            ])
            let found = try client.api("GET", "/inApps/v1/lookup/MK5T%2FTVWJH", token).json(OrderLookupResponse.self)
            #expect(found.status == 0)
            #expect(found.signedTransactions == added.prefix(2).map(\.signedTransaction))
            let unknown = try client.api("GET", "/inApps/v1/lookup/SANDBOX1", token).json(OrderLookupResponse.self)
            #expect(unknown.status == 1)
            #expect(unknown.signedTransactions == nil)
            let sandbox = try client.api("GET", "/sandbox/inApps/v1/lookup/SANDBOX1", token)
                .json(OrderLookupResponse.self)
            #expect(sandbox.signedTransactions == [added[2].signedTransaction])
        }
    }

    @Test("Notification history: recorded notifications, paged, filtered, signed")
    func notificationHistory() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let now = Date()
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "a"),
                FakePurchase(bundleId: Self.bundle, productId: "b", revocationDate: 1_700_000_000_000),
                FakePurchase(bundleId: Self.bundle, productId: "sub", type: "Auto-Renewable Subscription"),
            ])
            try server.purchases.recordNotification(
                type: "REFUND", transactionId: added[0].transactionId, delivered: false
            )
            let start = Int64(now.timeIntervalSince1970 * 1000) - 60_000
            let end = start + 3_600_000
            func page(_ body: [String: Any], token paginationToken: String? = nil) throws -> LoopbackHTTPClient.Response {
                let query = paginationToken.map { "?paginationToken=\($0)" } ?? ""
                return try client.api(
                    "POST", "/inApps/v1/notifications/history\(query)", token,
                    body: try JSONSerialization.data(withJSONObject: body)
                )
            }
            var payloads: [String] = []
            var next: String?
            repeat {
                let response = try page(["startDate": start, "endDate": end], token: next)
                    .json(NotificationHistoryResponse.self)
                #expect((response.notificationHistory?.count ?? 0) <= 2)
                payloads += response.notificationHistory?.compactMap(\.signedPayload) ?? []
                next = response.hasMore == true ? response.paginationToken : nil
            } while next != nil
            #expect(payloads.count == 4)
            let types = try payloads.map { payload -> String in
                let verified = try Self.verifier(server).verify(payload)
                let object = try JSONSerialization.jsonObject(with: Data(verified.payload)) as? [String: Any]
                return object?["notificationType"] as? String ?? "?"
            }
            #expect(types == ["ONE_TIME_CHARGE", "REFUND", "SUBSCRIBED", "REFUND"])

            let customer = try page(["startDate": start, "endDate": end, "transactionId": added[0].transactionId])
                .json(NotificationHistoryResponse.self)
            #expect(customer.notificationHistory?.count == 2)
            let failures = try page(["startDate": start, "endDate": end, "onlyFailures": true])
                .json(NotificationHistoryResponse.self)
            #expect(failures.notificationHistory?.count == 1)
            #expect(failures.notificationHistory?.first?.sendAttempts?.first?.sendAttemptResult == "NO_RESPONSE")
            let typed = try page(["startDate": start, "endDate": end, "notificationType": "REFUND"])
                .json(NotificationHistoryResponse.self)
            #expect(typed.notificationHistory?.count == 2)
            let sandbox = try client.api(
                "POST", "/sandbox/inApps/v1/notifications/history", token,
                body: try JSONSerialization.data(withJSONObject: ["startDate": start, "endDate": end])
            ).json(NotificationHistoryResponse.self)
            #expect(sandbox.notificationHistory == [])

            for (body, code) in [
                (["endDate": end] as [String: Any], 4000015), (["startDate": start], 4000016),
                (["startDate": end, "endDate": start], 4000013),
                (["startDate": start, "endDate": end, "transactionId": "1", "notificationType": "REFUND"], 4000019),
            ] {
                #expect(try page(body).json(ServerAPIErrorPayload.self).errorCode == code)
            }
            let badToken = try page(["startDate": start, "endDate": end], token: "bogus")
            #expect(try badToken.json(ServerAPIErrorPayload.self).errorCode == 4000014)
        }
    }

    @Test("faults: 429 with Retry-After in epoch milliseconds, 5000001, an HTML 503, truncated JSON, a slow answer")
    func faults() throws {
        let token = TestToken()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "a")])
            let path = "/inApps/v1/transactions/\(added[0].transactionId)"
            server.injectAPIFaults([
                .rateLimited(retryAfterMilliseconds: 1_500), .internalRetryable, .html503, .slow(milliseconds: 300),
            ])
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let limited = try client.api("GET", path, token)
            #expect(limited.status == 429)
            #expect(try limited.json(ServerAPIErrorPayload.self).errorCode == 4290000)
            let retryAt = try #require(limited.headers["retry-after"].flatMap { Int64($0) })
            #expect(retryAt >= before + 1_500 && retryAt < before + 60_000)
            let internalError = try client.api("GET", path, token)
            #expect(internalError.status == 500)
            #expect(try internalError.json(ServerAPIErrorPayload.self).errorCode == 5000001)
            let html = try client.api("GET", path, token)
            #expect(html.status == 503)
            #expect(html.text.contains("<html>"))
            let started = ContinuousClock.now
            #expect(try client.api("GET", path, token).status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(290))

            let faults = try client.request("POST", "/fake/api-faults", body: Data(#"{"faults": ["truncated"]}"#.utf8))
            #expect(faults.status == 200)
            let truncated = try client.api("GET", path, token)
            #expect(truncated.status == 200)
            #expect(truncated.headers["connection"] == "close")
            #expect((try? truncated.json(TransactionInfoResponse.self)) == nil)
            // The truncated answer closed that connection.
            let again = try LoopbackHTTPClient(port: server.port)
            let bogus = Data(#"{"faults": ["bogus"]}"#.utf8)
            #expect(try again.request("POST", "/fake/api-faults", body: bogus).status == 400)
            let stats = server.apiStats()
            for label in ["429", "5000001", "html503", "truncated"] {
                #expect(stats.count("production.transaction_info", label) == 1, "\(label)")
            }
        }
    }

    @Test("Apple's rate limit: past the configured requests per second, 429 with Retry-After")
    func rateLimit() throws {
        let token = TestToken()
        try withAPIServer(token, change: { $0.apiRateLimit = 3 }) { server, client in
            let statuses = try (0..<20).map { _ in try client.api("GET", "/inApps/v1/lookup/X", token).status }
            // Twenty requests on one connection take far less than a second here; a loaded machine may spread them,
            // but hardly to fewer than four in every second (with six, it did).
            #expect(statuses.prefix(3) == [200, 200, 200])
            #expect(statuses.contains(429))
            #expect(server.apiStats().maxPerSecond("order_lookup") >= 4)
        }
    }

    @Test("the root certificate: written where configured, served at /fake/root-certificate, the chain's own")
    func rootCertificate() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-root-\(UUID()).der").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let chain = try SigningChain()
        try withAPIServer(change: { $0.rootCertificatePath = path; $0.signingChain = chain }) { server, client in
            #expect(server.rootCertificatePath == path)
            let written = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(written == (try chain.rootDER()))
            let served = try client.request("GET", "/fake/root-certificate")
            #expect(served.status == 200)
            #expect(Array(served.body) == written)
            let other = FileManager.default.temporaryDirectory.appendingPathComponent("fake-root-\(UUID()).der").path
            defer { try? FileManager.default.removeItem(atPath: other) }
            #expect(try server.writeRootCertificate(to: other) == other)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: other))) == written)
        }
    }

    @Test("unknown App Store Server API paths and methods are 404; verifyReceipt still answers beside it")
    func routes() throws {
        let token = TestToken()
        try withAPIServer(token) { (_: FakeAppStoreServer, client: LoopbackHTTPClient) throws in
            #expect(try client.api("GET", "/inApps/v1/unknown/1", token).status == 404)
            #expect(try client.api("POST", "/inApps/v1/transactions/1", token).status == 404)
            #expect(try client.api("GET", "/inApps/v1/notifications/history", token).status == 404)
            #expect(try client.verify("/verifyReceipt", receiptData: "").status == 200)
        }
    }
}
