import Foundation

/// The fake's own routes for the App Store Server API, for the demo, the benchmark and tests in other processes:
/// - `POST /fake/transactions` `{"purchases": [FakePurchase…]}`: adds purchases; answers `{"purchases":
///   [SignedPurchase…]}`, each with its ids and `signedTransaction` (the JWS).
/// - `POST /fake/notifications` `{"transactionId", "notificationType", "subtype"?, "delivered"?}`: records one more
///   notification; answers `{"signedPayload"}`.
/// - `GET /fake/root-certificate`: the signing chain's root, DER (what `APPSTORE_ROOT_CERTIFICATES` must hold).
/// - `POST /fake/api-faults` `{"faults": ["429:1500", "5000001", "html503", "truncated", "slow:800"]}`: the next
///   requests get these faults, in order.
/// - `GET /fake/api-stats`, `POST /fake/api-stats/reset`: `ServerAPIStats`.
struct FakeAdminResponder: Sendable {
    let api: ServerAPIState

    private struct Purchases: Codable {
        var purchases: [FakePurchase]
    }

    private struct Added: Encodable {
        var purchases: [SignedPurchase]
    }

    private struct NotificationRequest: Decodable {
        var transactionId: String
        var notificationType: String
        var subtype: String?
        var delivered: Bool?
    }

    private struct Faults: Decodable {
        var faults: [String]
    }

    /// The answer, or nil for a path that is not one of these routes.
    func reply(method: String, path: String, body: [UInt8]) -> FakeHTTPAnswer? {
        switch (method, path) {
        case ("POST", "/fake/transactions"):
            return decoded(Purchases.self, body) { request in
                Self.json(200, Added(purchases: try api.store.add(request.purchases)))
            }
        case ("POST", "/fake/notifications"):
            return decoded(NotificationRequest.self, body) { request in
                let payload = try api.store.recordNotification(
                    type: request.notificationType, subtype: request.subtype, transactionId: request.transactionId,
                    delivered: request.delivered ?? true
                )
                return Self.json(200, ["signedPayload": payload])
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
        case ("POST", "/fake/api-stats/reset"):
            api.resetStats()
            return Self.json(200, api.currentStats)
        default:
            return nil
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
