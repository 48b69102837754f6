@testable import AppStoreClient
import AppStoreModel
import Foundation
import Testing

/// Get All Subscription Statuses answers as the client reads them: at least 100,000 mutated inputs, from answers
/// in Apple's documented shape carrying the real JWS of ../shared/fixtures/apple.
@Suite("Fuzz: App Store Server API subscription statuses", .needsAppleFixtures)
struct SubscriptionStatusesFuzzTests {
    @Test("Get All Subscription Statuses answers")
    func subscriptionStatuses() throws {
        let jws = try FuzzSeeds.realJWSStrings()
        let last = { (status: Int) in
            SubscriptionStatusesResponse.LastTransaction(
                originalTransactionId: "2000000123456780", status: status, signedTransactionInfo: jws[0],
                signedRenewalInfo: jws[1]
            )
        }
        let seeds = [
            try FuzzSeeds.json(SubscriptionStatusesResponse(
                environment: "Production", bundleId: "com.example.app", appAppleId: 1_234_567_890,
                data: [
                    .init(subscriptionGroupIdentifier: "21345678", lastTransactions: [last(1), last(4)]),
                    .init(subscriptionGroupIdentifier: "21345679", lastTransactions: [last(5)]),
                ]
            )),
            try FuzzSeeds.json(SubscriptionStatusesResponse(
                environment: "Sandbox", bundleId: "com.example.app", appAppleId: nil, data: []
            )),
        ]
        for seed in seeds {
            guard case .value = ServerAPIClient.subscriptionChains(seed, environment: .production) else {
                throw SeedError("a seed is not read: \(String(decoding: seed, as: UTF8.self))")
            }
        }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            "subscription statuses answer", make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { body, tally in
                switch ServerAPIClient.subscriptionChains(body, environment: .production) {
                case .value: tally.decoded += 1
                case .failed: tally.refused += 1
                }
            }
        )
    }
}
