import AppStoreClient
import AppStoreModel
@testable import AppStoreSignedData
import Foundation
import Testing

/// The payloads of signed data (StoreKit 2 transactions, renewal infos, V2 notifications, and what the verifier reads
/// before trusting one): at least 100,000 mutated inputs each, from the real JWS in ../shared/fixtures/apple and from
/// payloads in the shapes the fake App Store signs.
@Suite("Fuzz: signed data payloads", .needsAppleFixtures)
struct SignedDataFuzzTests {
    static func transactionSeeds() throws -> [[UInt8]] {
        try FuzzSeeds.realTransactionPayloads() + [
            FuzzSeeds.madeTransaction(environment: "Production"),
            FuzzSeeds.madeTransaction(environment: "Xcode", revoked: true),
        ]
    }

    static func renewalSeeds() throws -> [[UInt8]] {
        [
            try FuzzSeeds.madeRenewalInfo(environment: "Sandbox"),
            try FuzzSeeds.madeRenewalInfo(environment: "Xcode", expired: true),
        ]
    }

    @Test("signed transactions: every mutated payload decodes or is refused with SignedDataError")
    func signedTransactions() throws {
        let seeds = try Self.transactionSeeds()
        for seed in seeds { _ = try SignedTransaction(payload: seed) }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            "signed transaction", make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { payload, tally in
                do throws(SignedDataError) {
                    let transaction = try SignedTransaction(payload: payload)
                    _ = transaction.contents  // the purchase the rules judge
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }

    @Test("renewal infos: every mutated payload decodes (as a notification reads it) or is refused with a decoding error")
    func renewalInfos() throws {
        let seeds = try Self.renewalSeeds()
        for seed in seeds { _ = try BoundedJSON.decode(SignedRenewalInfo.self, from: seed) }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            "renewal info", make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { payload, tally in
                do {
                    _ = try BoundedJSON.decode(SignedRenewalInfo.self, from: payload)
                    tally.decoded += 1
                } catch is DecodingError {
                    tally.refused += 1
                } catch is SignedDataError {
                    tally.refused += 1  // a date no Int64 holds, refused by the verifier's own checks
                } catch {
                    tally.foreign(error)
                }
            }
        )
    }

    /// App transactions (JWSAppTransactionDecodedPayload) in the shape Apple's library documents, Production and
    /// Xcode.
    static func appTransactionSeeds() -> [[UInt8]] {
        ["Production", "Xcode"].map { environment in
            Array(
                (#"{"receiptType":"\#(environment)","appAppleId":531412,"bundleId":"com.example","#
                    + #""applicationVersion":"1.2.3","versionExternalIdentifier":512,"#
                    + #""receiptCreationDate":1698148900000,"originalPurchaseDate":1698148800000,"#
                    + #""originalApplicationVersion":"1.1.2","deviceVerification":"ZGV2aWNl","#
                    + #""deviceVerificationNonce":"48ccfa42-7431-4f22-9908-7e88983e105a","#
                    + #""preorderDate":1698148700000,"appTransactionId":"71134","originalPlatform":"iOS"}"#).utf8
            )
        }
    }

    @Test("app transactions: every mutated payload decodes or is refused with SignedDataError")
    func appTransactions() throws {
        let seeds = Self.appTransactionSeeds()
        for seed in seeds {
            let app = try SignedAppTransaction(payload: seed)
            #expect(app.appTransactionId == "71134" && app.originalPurchaseDateMs == 1_698_148_800_000)
            #expect(try PayloadFacts(seed).signedDateMs == 1_698_148_900_000)
        }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            "app transaction", make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { payload, tally in
                do throws(SignedDataError) {
                    _ = try PayloadFacts(payload)
                    _ = try SignedAppTransaction(payload: payload)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }

    @Test("what the verifier reads first (signedDate, environment): every mutated payload read or refused")
    func payloadFacts() throws {
        let seeds = try Self.transactionSeeds() + Self.renewalSeeds() + FuzzSeeds.realNotificationPayloads()
            + Self.appTransactionSeeds()
        for seed in seeds { _ = try PayloadFacts(seed) }
        let mutator = JSONMutator(seeds: seeds)
        _ = FuzzRun.run(
            "payload facts", make: { mutator.mutate(using: &$0) }, bytes: { $0 },
            decode: { payload, tally in
                do throws(SignedDataError) {
                    _ = try PayloadFacts(payload)
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }

    /// Notifications go through `verifyNotification`, the decoder's only entry: Xcode data, which the verifier takes
    /// unsigned when test environments are allowed, so each input costs no signature. Its nested transaction and
    /// renewal info are mutated too (a third of the inputs).
    @Test("notifications: every mutated payload (or nested payload) verifies or is refused with SignedDataError")
    func notifications() throws {
        let transactions = try Self.transactionSeeds()
        let renewals = try Self.renewalSeeds()
        let xcodeTransaction = try FuzzSeeds.madeTransaction(environment: "Xcode")
        let xcodeRenewal = try FuzzSeeds.madeRenewalInfo(environment: "Xcode")
        let outerSeeds = [
            try FuzzSeeds.madeNotification(
                type: "DID_RENEW", subtype: nil, transaction: xcodeTransaction, renewal: xcodeRenewal
            ),
            try FuzzSeeds.madeNotification(
                type: "REFUND", subtype: nil, transaction: try FuzzSeeds.madeTransaction(environment: "Xcode", revoked: true),
                renewal: nil, appAppleId: nil
            ),
            try FuzzSeeds.madeNotification(type: "TEST", subtype: nil, transaction: nil, renewal: nil),
            // Issue 38: `summary` in place of `data` (RENEWAL_EXTENSION SUMMARY), as Apple's own test resource has it.
            Array(
                #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"002e14d5-51f5-4503-b5a8-c3a1af68eb20","version":"2.0","signedDate":1698148900000,"summary":{"environment":"Xcode","appAppleId":41234,"bundleId":"com.example","productId":"com.example.product","requestIdentifier":"efb27071-45a4-4aca-9854-2a1e9146f265","storefrontCountryCodes":["CAN","USA","MEX"],"succeededCount":5,"failedCount":2}}"#
                    .utf8
            ),
        ]
        let verifier = SignedDataVerifier(
            configuration: .init(rootCertificates: [], onlineChecks: false, allowTestEnvironments: true)
        )
        for seed in outerSeeds {
            let notification = try verifier.verifyNotification(FuzzSeeds.unsignedJWS(seed))
            #expect(notification.environment == "Xcode")
        }
        let outer = JSONMutator(seeds: outerSeeds)
        let nestedTransactions = JSONMutator(seeds: transactions)
        let nestedRenewals = JSONMutator(seeds: renewals)
        _ = FuzzRun.run(
            "notification",
            make: { random -> [UInt8] in
                guard random.chance(33) else { return outer.mutate(using: &random) }
                let mutateTransaction = random.chance(50)
                // A nested payload made hostile; it keeps its Xcode environment when the mutation spared it.
                let transaction = mutateTransaction ? nestedTransactions.mutate(using: &random) : xcodeTransaction
                let renewal = mutateTransaction ? xcodeRenewal : nestedRenewals.mutate(using: &random)
                return (try? FuzzSeeds.madeNotification(
                    type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: transaction,
                    renewal: renewal
                )) ?? []
            },
            bytes: { $0 },
            decode: { payload, tally in
                do throws(SignedDataError) {
                    let notification = try verifier.verifyNotification(FuzzSeeds.unsignedJWS(payload))
                    _ = notification.transaction?.contents
                    tally.decoded += 1
                } catch {
                    tally.refused += 1
                }
            }
        )
    }
}
