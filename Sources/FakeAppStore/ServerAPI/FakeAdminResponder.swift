import Foundation

/// The fake's own routes for the App Store Server API, for the demo, the benchmark and tests in other processes:
/// - `POST /fake/transactions` `{"purchases": [FakePurchase…]}`: adds purchases; answers `{"purchases":
///   [SignedPurchase…]}`, each with its ids and `signedTransaction` (the JWS).
/// - `POST /fake/notifications`: makes a notification (`FakeNotificationRequest`) and, when asked, sends it; answers
///   `{"signedPayload", "notificationUUID", "notificationType", "subtype"?, "delivered", "sendAttemptResult"?}`
///   (`sendAttemptResult` when it was sent), once the attempt has ended. Which notification, one of:
///   - `"event"`: `"refund"` (`"transactionId"`, `"revocationReason"`? 0 or 1), `"reverse_refund"`
///     (`"transactionId"`), `"renew"` or `"expire"` (`"originalTransactionId"`, or a `"transactionId"` of the
///     subscription; `expire` takes `"subtype"`, VOLUNTARY by default): changes the purchase and records the
///     notification;
///   - `"notificationType"` (`"subtype"`?, `"consumptionRequestReason"`?) about `"transactionId"` as it stands
///     (DID_CHANGE_RENEWAL_STATUS, CONSUMPTION_REQUEST, TEST, …);
///   - `"duplicateOf"`: the notificationUUID of one made before: the very same signedPayload, again.
///
///   Options: `"signedDate"` (milliseconds; now by default: an older date stands for out-of-order delivery);
///   `"forged": true` (the same JSON signed by a chain nobody trusts, with `duplicateOf` or `notificationType`: it
///   changes no purchase, is kept only once sent, and never appears in Get Notification History); `"deliver"`
///   (send it; by default when the fake has a notification URL) to `"url"` (by default that URL); `"delivered"`
///   (what Get Notification History reports for one not sent; true by default).
/// - `POST /fake/sales-reports`: holds or releases days of the sales reports, names products by SKUs, plants
///   differences (`FakeSalesReportsRequest`).
/// - `GET /fake/root-certificate`: the signing chain's root, DER (what `APPSTORE_ROOT_CERTIFICATES` must hold).
/// - `POST /fake/api-faults` `{"faults": ["429:1500", "5000001", "html503", "truncated", "slow:800"]}`: the next
///   requests get these faults, in order.
/// - `GET /fake/api-stats`, `POST /fake/api-stats/reset`: `ServerAPIStats`.
/// - `GET /fake/consumption-answers`: `{"answers": [FakeConsumptionAnswer…]}`, the Send Consumption Information
///   requests accepted, oldest first, each body as received.
/// Refund requests: `POST /fake/notifications` with `"notificationType": "CONSUMPTION_REQUEST"` (and
/// `"consumptionRequestReason"`), then Apple's decision: `"event": "refund"`, or `"notificationType":
/// "REFUND_DECLINED"`.
struct FakeAdminResponder: Sendable {
    let api: ServerAPIState

    private struct Purchases: Codable {
        var purchases: [FakePurchase]
    }

    private struct Added: Encodable {
        var purchases: [SignedPurchase]
    }

    private struct Faults: Decodable {
        var faults: [String]
    }

    /// Hands the answer to `answer` (at once, or from another thread once a notification has been sent); false,
    /// and `answer` is not called, for a path that is not one of these routes.
    func reply(
        method: String, path: String, body: [UInt8], answer: @escaping @Sendable (FakeHTTPAnswer) -> Void
    ) -> Bool {
        if (method, path) == ("POST", "/fake/notifications") {
            notification(body, answer: answer)
            return true
        }
        guard let now = reply(method: method, path: path, body: body) else { return false }
        answer(now)
        return true
    }

    /// The answer of a route answered at once, or nil for a path that is not one of these routes.
    func reply(method: String, path: String, body: [UInt8]) -> FakeHTTPAnswer? {
        switch (method, path) {
        case ("POST", "/fake/transactions"):
            return decoded(Purchases.self, body) { request in
                Self.json(200, Added(purchases: try api.store.add(request.purchases)))
            }
        case ("POST", "/fake/sales-reports"):
            return decoded(FakeSalesReportsRequest.self, body) { request in
                try request.apply(to: api.salesReports)
                return Self.json(200, ["ok": true])
            }
        case ("GET", "/fake/root-certificate"):
            guard let der = try? api.chain.rootDER() else { return FakeHTTPAnswer(status: 500) }
            return FakeHTTPAnswer(status: 200, headers: [("Content-Type", "application/pkix-cert")], body: der)
        case ("POST", "/fake/api-faults"):
            return decoded(Faults.self, body) { request in
                let faults = request.faults.compactMap(ServerAPIFault.init(name:))
                guard faults.count == request.faults.count else {
                    throw FakeAppStoreError(
                        .invalidConfiguration,
                        "faults are 429, 429:MS, 5000001, html503, truncated, slow:MS; got \(request.faults)"
                    )
                }
                api.enqueue(faults)
                return Self.json(200, ["queued": faults.count])
            }
        case ("GET", "/fake/api-stats"):
            return Self.json(200, api.currentStats)
        case ("GET", "/fake/consumption-answers"):
            return Self.json(200, ["answers": api.receivedConsumptionAnswers])
        case ("POST", "/fake/api-stats/reset"):
            api.resetStats()
            return Self.json(200, api.currentStats)
        default:
            return nil
        }
    }

    private func notification(_ body: [UInt8], answer: @escaping @Sendable (FakeHTTPAnswer) -> Void) {
        let request: FakeNotificationRequest
        do {
            request = try JSONDecoder().decode(FakeNotificationRequest.self, from: Data(body))
        } catch {
            answer(Self.json(400, ["error": "\(error)"]))
            return
        }
        // Sent by default when the fake has a notification URL, as Apple sends to the one set for the app.
        let deliver = request.deliver ?? (api.notificationURL != nil)
        let url: String? = deliver ? request.url ?? api.notificationURL ?? "" : nil
        if let url, !FakeAppStoreServer.isHTTPURL(url) {
            answer(Self.json(400, ["error": "deliver needs an http:// or https:// url (or --notification-url)"]))
            return
        }
        let notification: PurchaseStore.Notification
        do {
            notification = try request.make(in: api.store)
        } catch {
            answer(Self.json(400, ["error": "\(error)"]))
            return
        }
        guard let url else {
            answer(Self.json(200, FakeNotificationRequest.Answer(notification)))
            return
        }
        api.deliver(notification, to: url) { sent in
            answer(Self.json(200, FakeNotificationRequest.Answer(sent)))
        }
    }

    /// Decodes the body and runs `answer`; a body that does not decode, or an error thrown, is a 400 with
    /// `{"error": …}`.
    private func decoded<T: Decodable>(
        _ type: T.Type, _ body: [UInt8], _ answer: (T) throws -> FakeHTTPAnswer
    ) -> FakeHTTPAnswer {
        do {
            return try answer(try JSONDecoder().decode(T.self, from: Data(body)))
        } catch {
            return Self.json(400, ["error": "\(error)"])
        }
    }

    private static func json(_ status: Int, _ value: some Encodable) -> FakeHTTPAnswer {
        (try? FakePayloads.json(value)).map { FakeHTTPAnswer.json(status, $0) } ?? FakeHTTPAnswer(status: 500)
    }
}
