import AppleFixtureFiles
@testable import AppStoreClient
import AppStoreModel
import Foundation
import Testing

/// The App Store Server API's answers as the client reads them: at least 100,000 mutated inputs each, from answers made
/// in Apple's documented shapes (the models the fake App Store answers with), carrying the real JWS of
/// ../shared/fixtures/apple. Every input becomes a value or a failure value (retryable, not found, configuration).
@Suite("Fuzz: App Store Server API answers", .needsAppleFixtures)
struct ServerAPIFuzzTests {
    /// Feeds mutated `seeds` to `read` and counts a value as decoded, a failure as refused.
    private func fuzz<Value>(
        _ name: String, seeds: [[UInt8]], read: @escaping ([UInt8]) -> ServerAPIClient.Attempt<Value>
    ) {
        for seed in seeds {
            guard case .value = read(seed) else {
                Issue.record("\(name): a seed is not read: \(String(decoding: seed, as: UTF8.self))")
                return
            }
        }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            name, make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { body, tally in
                switch read(body) {
                case .value: tally.decoded += 1
                case .failed: tally.refused += 1
                }
            }
        )
    }

    @Test("Get Transaction Info answers")
    func transactionInfo() throws {
        let seeds = try FuzzSeeds.realJWSStrings().map { try FuzzSeeds.json(TransactionInfoResponse(signedTransactionInfo: $0)) }
        fuzz("transaction info answer", seeds: seeds) { ServerAPIClient.signedTransactionInfo($0, environment: .production) }
    }

    @Test("Get Transaction History answers")
    func transactionHistory() throws {
        let jws = try FuzzSeeds.realJWSStrings()
        let seeds = [
            try FuzzSeeds.json(TransactionHistoryResponse(
                revision: "eyJ0b2tlbiI6IjIwMDAwMDAxMjM0NTY3ODkifQ", hasMore: true, bundleId: "com.example.app",
                appAppleId: 1_234_567_890, environment: "Production", signedTransactions: jws
            )),
            try FuzzSeeds.json(TransactionHistoryResponse(
                revision: "", hasMore: false, bundleId: "com.example.app", appAppleId: nil, environment: "Sandbox",
                signedTransactions: [jws[0]]
            )),
        ]
        fuzz("transaction history answer", seeds: seeds) {
            ServerAPIClient.decode(TransactionHistoryResponse.self, from: $0, environment: .production)
        }
    }

    @Test("Get Refund History answers")
    func refundHistory() throws {
        let jws = try FuzzSeeds.realJWSStrings()
        let seeds = [
            try FuzzSeeds.json(
                RefundHistoryResponse(revision: "fake-refund-revision-2", hasMore: true, signedTransactions: jws)
            ),
            try FuzzSeeds.json(RefundHistoryResponse(revision: "", hasMore: false, signedTransactions: [])),
        ]
        fuzz("refund history answer", seeds: seeds) {
            ServerAPIClient.decode(RefundHistoryResponse.self, from: $0, environment: .production)
        }
    }

    @Test("Look Up Order ID answers")
    func orderLookup() throws {
        let seeds = [
            try FuzzSeeds.json(OrderLookupResponse(status: 0, signedTransactions: try FuzzSeeds.realJWSStrings())),
            try FuzzSeeds.json(OrderLookupResponse(status: 0, signedTransactions: [])),
        ]
        fuzz("order lookup answer", seeds: seeds) { ServerAPIClient.orderTransactions($0, environment: .sandbox) }
    }

    @Test("Get Notification History answers")
    func notificationHistory() throws {
        let notifications = [
            try AppleFixtureFiles.text("appstoreserverlibrary-testca-signed-notification.jws")
                .trimmingCharacters(in: .whitespacesAndNewlines),
            try AppleFixtureFiles.appleTestNotification(),
        ]
        let item = { (payload: String) in
            NotificationHistoryItem(signedPayload: payload, sendAttempts: [
                .init(attemptDate: 1_700_000_000_000, sendAttemptResult: "TIMED_OUT"),
                .init(attemptDate: 1_700_000_360_000, sendAttemptResult: "SUCCESS"),
            ])
        }
        let seeds = [
            try FuzzSeeds.json(NotificationHistoryResponse(
                paginationToken: "57715481-805a-4283-8499-1c19b5d6b20a", hasMore: true,
                notificationHistory: notifications.map(item)
            )),
            try FuzzSeeds.json(NotificationHistoryResponse(hasMore: false, notificationHistory: [])),
        ]
        fuzz("notification history answer", seeds: seeds) { ServerAPIClient.notificationPage($0, environment: .production) }
    }

    /// Error answers: Apple's error bodies for every code, under the HTTP statuses Apple sends and others, with a
    /// Retry-After (a number of seconds, milliseconds since 1970, an HTTP date, and mutations of these) on a tenth.
    @Test("error answers and Retry-After")
    func errorAnswers() throws {
        let seeds = try ServerAPIErrorCode.allCases.map { try FuzzSeeds.json($0.payload) }
            + [Array("<html><body>502 Bad Gateway</body></html>".utf8)]
        let bodies = JSONMutator(seeds: seeds)
        let retryAfters = JSONMutator(seeds: ["1", "1700000000000", "Wed, 21 Oct 2015 07:28:00 GMT", "0.5"].map {
            Array($0.utf8)
        })
        let statuses = [400, 401, 403, 404, 408, 429, 500, 503, 0, 999, -1, Int.max, Int.min]
        _ = FuzzRun.run(
            "error answer",
            make: { random -> (Int, String?, [UInt8]) in
                let retryAfter = random.chance(10)
                    ? String(decoding: retryAfters.mutate(using: &random), as: UTF8.self) : nil
                return (random.pick(statuses), retryAfter, bodies.mutate(using: &random))
            },
            bytes: { $0.2 },
            decode: { input, tally in
                let (status, retryAfter, body) = input
                let attempt = ServerAPIClient.interpret(
                    httpStatus: status, retryAfter: retryAfter, body: body, environment: .production
                )
                switch attempt {
                case .value: tally.decoded += 1
                case .failed(_, let failure):
                    if let seconds = failure.retryAfterSeconds {
                        #expect(seconds.isFinite && seconds >= 0 && seconds <= 86_400, "Retry-After \(retryAfter ?? "")")
                    }
                    // An answer read for its error code counts as decoded; one that is not JSON as refused.
                    if failure.appleStatus != nil { tally.decoded += 1 } else { tally.refused += 1 }
                }
            }
        )
    }

    @Test("renewal-date extension answers (one chain, mass request, mass status)")
    func renewalExtensions() throws {
        let seeds = [
            try FuzzSeeds.json(RenewalExtension.Response(
                originalTransactionId: "2312412", webOrderLineItemId: "9993", success: true,
                effectiveDate: 1_698_148_900_000
            )),
            try FuzzSeeds.json(RenewalExtension.MassResponse(requestIdentifier: "758883e8-151b-47b7-abd0-60c4d804c2f5")),
            try FuzzSeeds.json(RenewalExtension.MassStatus(
                requestIdentifier: "20fba8a0-2b80-4a7d-a17f-85c1854727f8", complete: true,
                completeDate: 1_698_148_900_000, succeededCount: 30, failedCount: 2
            )),
        ]
        fuzz("extend renewal answer", seeds: [seeds[0]]) {
            ServerAPIClient.decode(RenewalExtension.Response.self, from: $0, environment: .production)
        }
        fuzz("mass extension answer", seeds: [seeds[1]]) {
            ServerAPIClient.decode(RenewalExtension.MassResponse.self, from: $0, environment: .production)
        }
        fuzz("mass extension status", seeds: [seeds[2]]) {
            ServerAPIClient.decode(RenewalExtension.MassStatus.self, from: $0, environment: .sandbox)
        }
    }
}
