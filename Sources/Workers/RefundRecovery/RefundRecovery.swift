import AppStoreClient
import AppStoreModel
import AppStoreSignedData
import Foundation
import Logging
import PostgresClient
import ReceiptQueue

/// Recovers refunds the ledger missed (`receipt-worker refunds`): asks Get Refund History v2 about a customer, verifies
/// every signed transaction it returns (chain to a trusted root, signed data only), keeps only those for the app and
/// environment asked about, and, to apply them, hands each to `receipt_refund_recover()`, which applies a refund the
/// ledger lacks exactly as its REFUND notification would have been and leaves one it has as it is. No database while
/// Apple answers.
public struct RefundRecovery: Sendable {
    public let client: ServerAPIClient
    public let verifier: SignedDataVerifier
    /// Our apps (APPLE_BUNDLE_IDS): a refunded transaction of any other app is never applied.
    public let bundleIds: Set<String>
    /// Get Refund History pages read for one customer at most (20 refunds a page); past it the lookup fails rather than
    /// decide from part of the history.
    public var maxPages: Int
    public let logger: Logger

    public init(
        client: ServerAPIClient, verifier: SignedDataVerifier, bundleIds: Set<String>, maxPages: Int = 500,
        logger: Logger = Logger(label: "receipt-worker.refunds")
    ) {
        self.client = client
        self.verifier = verifier
        self.bundleIds = bundleIds
        self.maxPages = maxPages
        self.logger = logger
    }

    /// One refunded transaction of Apple's answer, verified.
    public struct Refund: Sendable, Hashable {
        public var transaction: SignedTransaction
        /// Why it is not applied (another app, another environment, no revocation in it); nil: it is ours.
        public var foreign: String?
        /// How `apply` went: applied, known, not_credited, not_ours; nil until applied.
        public var outcome: String?
    }

    /// What Apple answered about one customer.
    public struct Lookup: Sendable, Hashable {
        public var environment: AppStoreEndpoint
        public var refunds: [Refund]
        /// Signed transactions that did not verify (never applied), with why.
        public var unverified: [String]
        public var pages: Int
        /// The last page's revision (Apple's advice: keep it to ask later for newer refunds only).
        public var revision: String?
    }

    /// Why a customer's refunds could not be read.
    public struct LookupError: Error, Sendable, Hashable, CustomStringConvertible {
        /// Apple does not know the transaction (in any environment asked).
        public var notFound: Bool
        public var message: String
        public var description: String { message }
    }

    /// Get Refund History for the customer who owns `transactionId`, in `environment` (nil: production, then the
    /// sandbox once when production does not know the id), every page up to `maxPages`; each transaction verified.
    public func lookUp(
        transactionId: String, bundleId: String, environment: AppStoreEndpoint? = nil, now: Date = Date()
    ) -> Result<Lookup, LookupError> {
        var signed: [String] = []
        var pages = 0
        var revision: String?
        var answered = environment
        var lastRevision: String?
        repeat {
            let (result, _) = client.refundHistory(
                transactionId: transactionId, bundleId: bundleId, revision: revision, environment: answered
            )
            guard case .success(let history, let from) = result else {
                if case .notFound(let failure) = result {
                    return .failure(LookupError(notFound: true, message: "refund_history: \(failure.message)"))
                }
                return .failure(
                    LookupError(notFound: false, message: "refund_history: \(result.failure?.message ?? "no answer")")
                )
            }
            answered = from
            signed += history.signedTransactions
            pages += history.pages
            lastRevision = history.lastRevision
            revision = history.nextRevision
            if revision != nil, pages >= maxPages {
                return .failure(
                    LookupError(
                        notFound: false,
                        message: "refund_history: more than \(maxPages) pages (\(signed.count) refunds read); nothing "
                            + "decided from part of the history"
                    )
                )
            }
        } while revision != nil
        let endpoint = answered ?? .production
        var lookup = Lookup(environment: endpoint, refunds: [], unverified: [], pages: pages, revision: lastRevision)
        for jws in signed {
            do {
                let transaction = try verified(jws, now: now)
                lookup.refunds.append(
                    Refund(
                        transaction: transaction,
                        foreign: Self.foreign(transaction, bundleId: bundleId, environment: endpoint, ours: bundleIds)
                    )
                )
            } catch {
                lookup.unverified.append("\(error)")
            }
        }
        return .success(lookup)
    }

    /// Why `transaction` is not a refund to apply here: not for the app asked about (Apple answers for the app the
    /// token names, so another app in the answer is not trusted), not one of ours, not of the environment that
    /// answered, without a transaction id, or without a revocation date. nil: it is ours.
    static func foreign(
        _ transaction: SignedTransaction, bundleId: String, environment: AppStoreEndpoint, ours: Set<String>
    ) -> String? {
        guard transaction.bundleId == bundleId, ours.contains(bundleId) else {
            return "for \(transaction.bundleId ?? "no app"), asked for \(bundleId)"
                + (ours.contains(bundleId) ? "" : " (not in APPLE_BUNDLE_IDS)")
        }
        guard transaction.environment == environment.environment.rawValue else {
            return "signed for \(transaction.environment ?? "no environment"), answered by \(environment.rawValue)"
        }
        guard transaction.transactionId?.isEmpty == false else { return "no transactionId" }
        guard transaction.revocationDateMs != nil else { return "no revocationDate: not refunded" }
        return nil
    }

    /// Applies each of `lookup`'s refunds that is ours (`receipt_refund_recover()`, one transaction each) and records
    /// the outcome in it.
    public func apply(_ lookup: inout Lookup, _ connection: PostgresConnection) throws {
        for index in lookup.refunds.indices where lookup.refunds[index].foreign == nil {
            lookup.refunds[index].outcome = try apply(lookup.refunds[index].transaction, connection)
        }
    }

    /// Applies one verified refunded transaction of ours: applied, known, not_credited or not_ours.
    public func apply(_ transaction: SignedTransaction, _ connection: PostgresConnection) throws -> String {
        // What a REFUND notification's write-back carries (NotificationResult.refundFacts): the type and the share.
        var facts = NotificationResult.transaction(transaction)
        facts.revocationType = transaction.revocationType
        facts.revocationPercentage = transaction.revocationPercentage
        let outcome = NotificationOutcome(
            kind: .verified,
            notification: NotificationOutcome.Facts(
                uuid: UUID().uuidString.lowercased(), type: Self.notificationType,
                environment: transaction.environment, bundleId: transaction.bundleId,
                signedDateMs: transaction.signedDateMs ?? transaction.revocationDateMs ?? 0
            ),
            transaction: facts
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let document = String(decoding: try encoder.encode(outcome), as: UTF8.self)
        return try connection.query("SELECT receipt_refund_recover($1::jsonb) AS outcome", [document])[0, "outcome"]
            ?? "not_ours"
    }

    /// The payload of `jws` once its signature and chain held (test-environment data, never Apple's, refused).
    private func verified(_ jws: String, now: Date) throws -> SignedTransaction {
        let verified: SignedDataVerifier.Verified
        do {
            verified = try verifier.verify(jws, now: now)
        } catch {
            throw LookupError(notFound: false, message: "did not verify: \(error.message)")
        }
        guard verified.isSigned else { throw LookupError(notFound: false, message: "unsigned data in Apple's answer") }
        do {
            return try SignedTransaction(payload: verified.payload)
        } catch {
            throw LookupError(notFound: false, message: "the payload does not decode: \(error.message)")
        }
    }

    /// The `notification_type` the events of a recovered refund carry.
    public static let notificationType = "REFUND_HISTORY"
}
