import AppStoreModel
import AppStoreSignedData
import Foundation
import LoopbackHTTP
import Testing

@testable import FakeAppStore

/// App Store Server Notifications V2 from the fake: purchase events, duplicates, out-of-order dates, forgeries, and
/// their delivery to an app's server, each checked with the service's own verifier.
@Suite("Fake App Store: sending notifications")
struct NotificationSendingTests {
    static let bundle = "com.example.app"
    static let day: Int64 = 86_400_000

    static func verify(
        _ notification: PurchaseStore.Notification, _ server: FakeAppStoreServer
    ) throws -> SignedNotification {
        try ServerAPIFakeTests.verifier(server).verifyNotification(notification.signedPayload)
    }

    /// The JSON inside a compact JWS.
    static func payload(_ jws: String) throws -> [UInt8] {
        let parts = jws.split(separator: ".")
        return try #require(parts.count == 3 ? Base64URL.decode(parts[1]) : nil)
    }

    /// A port nothing listens on: one a receiver had, closed.
    static func closedPort() throws -> Int {
        let receiver = try LoopbackHTTPReceiver()
        receiver.stop()
        return receiver.port
    }

    @Test("refund: revocation in the re-signed transaction; reversal: gone again; each a fresh notification")
    func refundAndReversal() throws {
        try withAPIServer { server, _ in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "coins.100")])
            let id = added[0].transactionId

            let refund = try server.purchases.refund(transactionId: id, reason: 1)
            let refunded = try Self.verify(refund, server)
            #expect(refunded.notificationType == "REFUND")
            #expect(refunded.subtype == nil)
            #expect(refunded.notificationUUID == refund.notificationUUID)
            #expect(refunded.signedDateMs == refund.signedDate)
            #expect(refunded.bundleId == Self.bundle)
            #expect(refunded.environment == "Production")
            #expect(refunded.version == "2.0")
            #expect(refunded.transaction?.transactionId == id)
            #expect(refunded.transaction?.revocationDateMs == refund.signedDate)
            #expect(refunded.transaction?.revocationReason == 1)
            #expect(refunded.renewalInfo == nil)
            #expect(refunded.status == nil)
            let stored = try #require(server.purchases.purchases.first)
            #expect(stored.purchase.revocationDate == refund.signedDate)
            #expect(stored.signedTransaction != added[0].signedTransaction)
            #expect(throws: FakeAppStoreError.self) { try server.purchases.refund(transactionId: id) }

            let reversal = try server.purchases.reverseRefund(transactionId: id)
            let reversed = try Self.verify(reversal, server)
            #expect(reversed.notificationType == "REFUND_REVERSED")
            #expect(reversed.notificationUUID != refunded.notificationUUID)
            #expect(reversed.transaction?.transactionId == id)
            #expect(reversed.transaction?.revocationDateMs == nil)
            #expect(reversed.transaction?.revocationReason == nil)
            #expect(reversed.transaction?.purchaseDateMs == refunded.transaction?.purchaseDateMs)
            #expect(throws: FakeAppStoreError.self) { try server.purchases.reverseRefund(transactionId: id) }
            #expect(throws: FakeAppStoreError.self) { try server.purchases.refund(transactionId: "999") }
            let types = server.purchases.notifications.map(\.notificationType)
            #expect(types == ["ONE_TIME_CHARGE", "REFUND", "REFUND_REVERSED"])
        }
    }

    @Test("renewal: the next period with new ids; expiry: EXPIRED VOLUNTARY, intent 1, auto-renew off; renewal info")
    func renewAndExpire() throws {
        try withAPIServer { server, _ in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let (start, end) = (now - 30 * Self.day, now + Self.day)
            let first = try server.purchases.add([
                FakePurchase(
                    environment: "Sandbox", bundleId: Self.bundle, productId: "pro.monthly",
                    type: "Auto-Renewable Subscription", purchaseDate: start, expiresDate: end
                ),
            ])[0]
            let original = first.transactionId
            let subscribed = try Self.verify(try #require(server.purchases.notifications.last), server)
            #expect(subscribed.notificationType == "SUBSCRIBED")
            #expect(subscribed.subtype == "INITIAL_BUY")
            #expect(subscribed.status == 1)
            #expect(subscribed.renewalInfo?.renewalDateMs == end)
            let firstPeriod = try #require(subscribed.transaction)
            #expect(firstPeriod.webOrderLineItemId != nil)

            let renewal = try server.purchases.renew(originalTransactionId: original)
            let renewed = try Self.verify(renewal, server)
            #expect(renewed.notificationType == "DID_RENEW")
            #expect(renewed.subtype == nil)
            #expect(renewed.environment == "Sandbox")
            #expect(renewed.status == 1)
            let period = try #require(renewed.transaction)
            #expect(period.transactionId != original)
            #expect(period.transactionId == renewal.transactionId)
            #expect(period.originalTransactionId == original)
            #expect(period.webOrderLineItemId != nil)
            #expect(period.webOrderLineItemId != firstPeriod.webOrderLineItemId)
            #expect(period.purchaseDateMs == end)
            #expect(period.expiresDateMs == end + (end - start))
            #expect(period.originalPurchaseDateMs == start)
            #expect(period.transactionReason == "RENEWAL")
            #expect(period.productId == "pro.monthly")
            let info = try #require(renewed.renewalInfo)
            #expect(info.originalTransactionId == original)
            #expect(info.productId == "pro.monthly")
            #expect(info.autoRenewProductId == "pro.monthly")
            #expect(info.autoRenewStatus == 1)
            #expect(info.expirationIntent == nil)
            #expect(info.renewalDateMs == end + (end - start))
            #expect(info.recentSubscriptionStartDateMs == start)
            #expect(info.environment == "Sandbox")
            #expect(info.signedDateMs == renewal.signedDate)

            let renewedId = try #require(period.transactionId)
            let second = try Self.verify(try server.purchases.renew(originalTransactionId: renewedId), server)
            #expect(second.transaction?.purchaseDateMs == period.expiresDateMs)
            #expect(second.transaction?.originalTransactionId == original)

            let expiry = try server.purchases.expire(originalTransactionId: original)
            let expired = try Self.verify(expiry, server)
            #expect(expired.notificationType == "EXPIRED")
            #expect(expired.subtype == "VOLUNTARY")
            #expect(expired.status == 2)
            #expect(expired.transaction?.transactionId == second.transaction?.transactionId)
            #expect(expired.renewalInfo?.expirationIntent == 1)
            #expect(expired.renewalInfo?.autoRenewStatus == 0)
            #expect(expired.renewalInfo?.recentSubscriptionStartDateMs == start)

            let billing = try Self.verify(
                try server.purchases.expire(originalTransactionId: original, subtype: "BILLING_RETRY"), server
            )
            #expect(billing.renewalInfo?.expirationIntent == 2)

            let consumable = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "coins")])[0]
            #expect(throws: FakeAppStoreError.self) {
                try server.purchases.renew(originalTransactionId: consumable.transactionId)
            }
        }
    }

    @Test("any type by name: renewal status changes, CONSUMPTION_REQUEST with its reason, TEST without a transaction")
    func typesByName() throws {
        try withAPIServer { server, _ in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "pro", type: "Auto-Renewable Subscription",
                             purchaseDate: 1_760_000_000_000, expiresDate: 1_762_592_000_000),
                FakePurchase(bundleId: Self.bundle, productId: "coins"),
            ])
            let off = try Self.verify(
                try server.purchases.notify(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED",
                    transactionId: added[0].transactionId
                ),
                server
            )
            #expect(off.notificationType == "DID_CHANGE_RENEWAL_STATUS")
            #expect(off.subtype == "AUTO_RENEW_DISABLED")
            #expect(off.renewalInfo?.autoRenewStatus == 0)
            #expect(off.status == 1)
            let on = try Self.verify(
                try server.purchases.notify(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED",
                    transactionId: added[0].transactionId
                ),
                server
            )
            #expect(on.renewalInfo?.autoRenewStatus == 1)

            let request = try Self.verify(
                try server.purchases.notify(
                    type: "CONSUMPTION_REQUEST", transactionId: added[1].transactionId,
                    consumptionRequestReason: "UNINTENDED_PURCHASE"
                ),
                server
            )
            #expect(request.consumptionRequestReason == "UNINTENDED_PURCHASE")
            #expect(request.transaction?.transactionId == added[1].transactionId)

            let test = try Self.verify(
                try server.purchases.notify(type: "TEST", transactionId: added[1].transactionId), server
            )
            #expect(test.notificationType == "TEST")
            #expect(test.transaction == nil)
            #expect(test.renewalInfo == nil)
            #expect(test.bundleId == Self.bundle)
        }
    }

    @Test("out of order: an older signedDate sent after a newer event; forged: same JSON, untrusted chain")
    func outOfOrderAndForged() throws {
        try withAPIServer { server, _ in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "coins")])
            let id = added[0].transactionId
            let newer = try server.purchases.refund(transactionId: id)
            let earlier = Date(timeIntervalSince1970: Double(newer.signedDate - 600_000) / 1000)
            let older = try server.purchases.notify(type: "CONSUMPTION_REQUEST", transactionId: id, signedDate: earlier)
            let verified = try Self.verify(older, server)
            #expect(verified.signedDateMs == newer.signedDate - 600_000)
            #expect(verified.signedDateMs < (try Self.verify(newer, server)).signedDateMs)
            #expect(server.purchases.notifications.suffix(2).map(\.notificationUUID)
                == [newer.notificationUUID, older.notificationUUID])

            let forged = try server.purchases.forged(newer)
            #expect(forged.forged)
            #expect(forged.notificationUUID == newer.notificationUUID)
            #expect(forged.signedPayload != newer.signedPayload)
            #expect(try Self.payload(forged.signedPayload) == (try Self.payload(newer.signedPayload)))
            let error = #expect(throws: SignedDataError.self) { try Self.verify(forged, server) }
            #expect(error?.code == .untrustedChain)
            #expect(!server.purchases.notifications.contains { $0.forged })
        }
    }

    @Test("delivery: Apple's body to the app's server; a duplicate is the same payload; forged ones not in history")
    func delivery() throws {
        let receiver = try LoopbackHTTPReceiver()
        defer { receiver.stop() }
        let token = TestToken()
        try withAPIServer(token, change: { $0.notificationURL = receiver.url("/appstore") }) { server, client in
            let added = try server.purchases.add([FakePurchase(bundleId: Self.bundle, productId: "coins")])
            let refund = try server.purchases.refund(transactionId: added[0].transactionId)

            let sent = try server.deliver(refund)
            #expect(sent.delivered)
            #expect(sent.sendAttempts.map(\.result) == ["SUCCESS"])
            let request = try #require(receiver.requests.first)
            #expect(request.method == "POST")
            #expect(request.path == "/appstore")
            #expect(request.headers["content-type"] == "application/json")
            let body = try JSONDecoder().decode([String: String].self, from: request.body)
            #expect(body == ["signedPayload": refund.signedPayload])
            let received = try ServerAPIFakeTests.verifier(server).verifyNotification(body["signedPayload"] ?? "")
            #expect(received.notificationType == "REFUND")
            #expect(received.notificationUUID == refund.notificationUUID)

            let again = try server.deliver(refund)
            #expect(again.sendAttempts.count == 2)
            #expect(receiver.requests.count == 2)
            #expect(receiver.requests[1].body == request.body)
            #expect(server.purchases.notifications.filter { $0.notificationUUID == refund.notificationUUID }.count == 1)

            let forged = try server.deliver(try server.purchases.forged(refund))
            #expect(forged.forged)
            #expect(receiver.requests.count == 3)
            let forgedBody = try JSONDecoder().decode([String: String].self, from: receiver.requests[2].body)
            let error = #expect(throws: SignedDataError.self) {
                try ServerAPIFakeTests.verifier(server).verifyNotification(forgedBody["signedPayload"] ?? "")
            }
            #expect(error?.code == .untrustedChain)
            #expect(server.purchases.notifications.contains { $0.forged })
            #expect(server.purchases.notification(uuid: refund.notificationUUID)?.forged == false)

            receiver.answer(with: 503)
            let refused = try server.deliver(try server.purchases.reverseRefund(transactionId: added[0].transactionId))
            #expect(!refused.delivered)
            #expect(refused.sendAttempts.map(\.result) == ["UNSUCCESSFUL_HTTP_RESPONSE_CODE"])

            let history = try Self.history(client, token, [:])
            #expect(history.count == 3)
            #expect(!history.map(\.signedPayload).contains(forged.signedPayload))
            #expect(history[1].sendAttempts?.map(\.sendAttemptResult) == ["SUCCESS", "SUCCESS"])
            let failures = try Self.history(client, token, ["onlyFailures": true])
            #expect(failures.map(\.signedPayload) == [refused.signedPayload])
        }
    }

    @Test("a delivery nobody receives is not delivered, and Get Notification History lists it under onlyFailures")
    func undelivered() throws {
        let token = TestToken()
        let port = try Self.closedPort()
        try withAPIServer(token) { server, client in
            let added = try server.purchases.add(
                ["a", "b"].map { FakePurchase(bundleId: Self.bundle, productId: $0) },
                now: Date(timeIntervalSinceNow: -10)
            )
            let refund = try server.purchases.refund(transactionId: added[1].transactionId)
            #expect(throws: FakeAppStoreError.self) { try server.deliver(refund) }
            let lost = try server.deliver(refund, to: "http://127.0.0.1:\(port)/notifications")
            #expect(!lost.delivered)
            #expect(lost.sendAttempts.map(\.result) == ["NO_RESPONSE"])
            #expect(server.purchases.notification(uuid: refund.notificationUUID)?.delivered == false)

            let failures = try Self.history(client, token, ["onlyFailures": true])
            #expect(failures.map(\.signedPayload) == [refund.signedPayload])
            #expect(failures.first?.sendAttempts?.map(\.sendAttemptResult) == ["NO_RESPONSE"])
            let refunds = try Self.history(client, token, ["notificationType": "REFUND"])
            #expect(refunds.map(\.signedPayload) == [refund.signedPayload])
            let all = try Self.history(client, token, [:])
            #expect(all.count == 3)
            let later = try Self.history(client, token, ["startDate": refund.signedDate + 1])
            #expect(later.isEmpty)
            let upToRefund = try Self.history(client, token, ["endDate": refund.signedDate])
            #expect(upToRefund.count == 2)
        }
    }

    @Test("POST /fake/notifications: events, duplicates, forgeries and delivery over HTTP")
    func adminEndpoint() throws {
        let receiver = try LoopbackHTTPReceiver()
        defer { receiver.stop() }
        try withAPIServer { server, client in
            let added = try server.purchases.add([
                FakePurchase(bundleId: Self.bundle, productId: "coins"),
                FakePurchase(bundleId: Self.bundle, productId: "pro", type: "Auto-Renewable Subscription",
                             purchaseDate: 1_760_000_000_000, expiresDate: 1_762_592_000_000),
            ])
            func post(_ body: [String: Any]) throws -> (Int, [String: Any]) {
                let response = try client.request(
                    "POST", "/fake/notifications", body: try JSONSerialization.data(withJSONObject: body)
                )
                return (response.status, try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:])
            }
            let (status, refund) = try post([
                "event": "refund", "transactionId": added[0].transactionId, "revocationReason": 1,
                "deliver": true, "url": receiver.url("/n"),
            ])
            #expect(status == 200)
            #expect(refund["delivered"] as? Bool == true)
            #expect(refund["sendAttemptResult"] as? String == "SUCCESS")
            let uuid = try #require(refund["notificationUUID"] as? String)
            let payload = try #require(refund["signedPayload"] as? String)
            let verified = try ServerAPIFakeTests.verifier(server).verifyNotification(payload)
            #expect(verified.notificationUUID == uuid)
            #expect(verified.transaction?.revocationReason == 1)
            #expect(receiver.requests.count == 1)

            let (_, duplicate) = try post(["duplicateOf": uuid, "deliver": true, "url": receiver.url("/n")])
            #expect(duplicate["signedPayload"] as? String == payload)
            #expect(receiver.requests.count == 2)

            let signedDate = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
            let (_, renewal) = try post([
                "event": "renew", "originalTransactionId": added[1].transactionId, "signedDate": signedDate,
            ])
            #expect(renewal["delivered"] as? Bool == true)
            #expect(renewal["sendAttemptResult"] == nil)
            let renewed = try ServerAPIFakeTests.verifier(server)
                .verifyNotification(try #require(renewal["signedPayload"] as? String))
            #expect(renewed.notificationType == "DID_RENEW")
            #expect(renewed.signedDateMs == signedDate)
            #expect(renewed.transaction?.purchaseDateMs == 1_762_592_000_000)
            #expect(receiver.requests.count == 2)

            let (_, expiry) = try post(["event": "expire", "transactionId": added[1].transactionId])
            #expect(expiry["subtype"] as? String == "VOLUNTARY")

            let (_, forged) = try post(["duplicateOf": uuid, "forged": true])
            #expect(forged["notificationUUID"] as? String == uuid)
            let error = #expect(throws: SignedDataError.self) {
                try ServerAPIFakeTests.verifier(server).verifyNotification(forged["signedPayload"] as? String ?? "")
            }
            #expect(error?.code == .untrustedChain)
            #expect(!server.purchases.notifications.contains { $0.forged })
            let (_, forgedType) = try post([
                "notificationType": "CONSUMPTION_REQUEST", "transactionId": added[0].transactionId, "forged": true,
                "consumptionRequestReason": "OTHER",
            ])
            #expect(forgedType["notificationType"] as? String == "CONSUMPTION_REQUEST")
            #expect(!server.purchases.notifications.contains { $0.notificationType == "CONSUMPTION_REQUEST" })

            for bad in [
                ["event": "bogus", "transactionId": added[0].transactionId],
                ["event": "refund", "transactionId": added[0].transactionId, "forged": true],
                ["event": "refund"],
                ["duplicateOf": "00000000-0000-0000-0000-000000000000"],
                ["notificationType": "TEST", "transactionId": added[0].transactionId, "deliver": true],
                ["notificationType": "TEST", "event": "refund", "transactionId": added[0].transactionId],
            ] as [[String: Any]] {
                #expect(try post(bad).0 == 400, "\(bad)")
            }
        }
    }

    /// Every page of Get Notification History for the last hour (`body` adds filters or replaces the dates).
    static func history(
        _ client: LoopbackHTTPClient, _ token: TestToken, _ body: [String: Any]
    ) throws -> [NotificationHistoryItem] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var request: [String: Any] = ["startDate": now - 3_600_000, "endDate": now + 60_000]
        request.merge(body) { $1 }
        var items: [NotificationHistoryItem] = []
        var next: String?
        repeat {
            let query = next.map { "?paginationToken=\($0)" } ?? ""
            let response = try client.api(
                "POST", "/inApps/v1/notifications/history\(query)", token,
                body: try JSONSerialization.data(withJSONObject: request)
            ).json(NotificationHistoryResponse.self)
            #expect((response.notificationHistory?.count ?? 0) <= 2)
            items += response.notificationHistory ?? []
            next = response.hasMore == true ? response.paginationToken : nil
        } while next != nil
        return items
    }
}
