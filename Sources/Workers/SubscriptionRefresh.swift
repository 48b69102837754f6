import AppStoreClient
import AppStoreModel
import AppStoreSignedData
import Dispatch
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Synchronization

/// Asks Apple for the status of purchase chains (Get All Subscription Statuses) and applies what it says as a
/// notification would be (`receipt_subscription_refresh()`): it repairs a chain whose notification was missed (a
/// DID_RENEW never delivered leaves the row active with a past expires_at). Every signed transaction and renewal info
/// is verified with the `SignedDataVerifier` and must be for the chain's app and environment; an item that does not
/// verify is not applied. For `receipt-worker subscriptions-refresh`, and for `work` by itself
/// (`SubscriptionRefresher`).
public struct SubscriptionRefresh: Sendable {
    public let client: ServerAPIClient
    public let verifier: SignedDataVerifier
    public let logger: Logger

    public init(
        client: ServerAPIClient, verifier: SignedDataVerifier,
        logger: Logger = Logger(label: "receipt-worker.subscriptions")
    ) {
        self.client = client
        self.verifier = verifier
        self.logger = logger
    }

    /// Which chains to ask about (`receipt_subscriptions_stale()`); the filters combine.
    public struct Selection: Sendable, Hashable {
        public var userId: String?
        public var originalTransactionId: String?
        /// Only chains whose period ended at least this many hours ago with no renewal and no expiry seen.
        public var staleHours: Double?
        /// Only chains nothing was applied to for this many minutes.
        public var quietMinutes: Double?
        public var limit: Int

        public init(
            userId: String? = nil, originalTransactionId: String? = nil, staleHours: Double? = nil,
            quietMinutes: Double? = nil, limit: Int = 1000
        ) {
            self.userId = userId
            self.originalTransactionId = originalTransactionId
            self.staleHours = staleHours
            self.quietMinutes = quietMinutes
            self.limit = limit
        }
    }

    /// One purchase chain, and the transaction id to ask Apple about.
    public struct Chain: Sendable, Hashable {
        public var environment: String
        public var bundleId: String
        public var originalTransactionId: String
        public var transactionId: String
    }

    /// What a pass did.
    public struct Pass: Sendable, Hashable {
        /// Chains asked about.
        public var asked = 0
        /// Chains whose row Apple's answer changed (or created).
        public var applied = 0
        /// Chains Apple's answer left as they were (nothing newer than the row).
        public var unchanged = 0
        /// Chains not asked about, or whose answer was not applied (logged with the reason).
        public var failed = 0

        public init() {}
    }

    /// The chains `selection` names.
    public func chains(_ selection: Selection, _ connection: PostgresConnection) throws -> [Chain] {
        let rows = try connection.query(
            "SELECT environment, bundle_id, original_transaction_id, transaction_id "
                + "FROM receipt_subscriptions_stale($1, $2, $3, $4, $5)",
            [
                selection.userId, selection.originalTransactionId, selection.staleHours.map { String($0) },
                selection.quietMinutes.map { String($0) }, String(selection.limit),
            ]
        )
        return rows.rows.indices.compactMap { row in
            guard let environment = rows[row, "environment"], let bundleId = rows[row, "bundle_id"],
                let original = rows[row, "original_transaction_id"], let transactionId = rows[row, "transaction_id"]
            else { return nil }
            return Chain(
                environment: environment, bundleId: bundleId, originalTransactionId: original,
                transactionId: transactionId
            )
        }
    }

    /// What Apple says of `chain`'s customer: one write-back per chain it returns, every signed item verified (no
    /// database). A failure names why nothing can be applied.
    public func statuses(of chain: Chain, now: Date = Date()) -> Result<[NotificationOutcome], RefreshError> {
        let endpoint: AppStoreEndpoint
        switch chain.environment {
        case "Production": endpoint = .production
        case "Sandbox": endpoint = .sandbox
        default: return .failure(RefreshError("Apple is not asked about \(chain.environment) data"))
        }
        let (result, _) = client.subscriptionStatuses(
            transactionId: chain.transactionId, bundleId: chain.bundleId, environment: endpoint
        )
        guard case .success(let items, _) = result else {
            let failure = result.failure
            return .failure(RefreshError("subscription_statuses: \(failure?.message ?? "no answer")"))
        }
        var outcomes: [NotificationOutcome] = []
        for item in items {
            do {
                outcomes.append(try outcome(of: item, chain: chain, now: now))
            } catch {
                return .failure(error)
            }
        }
        return .success(outcomes)
    }

    /// Applies `outcomes` (from `statuses(of:)`); the statuses the rows have after, nil where nothing changed.
    public func apply(_ outcomes: [NotificationOutcome], _ connection: PostgresConnection) throws -> [String?] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try outcomes.map { outcome in
            let document = String(decoding: try encoder.encode(outcome), as: UTF8.self)
            return try connection.query("SELECT receipt_subscription_refresh($1::jsonb) AS status", [document])[
                0, "status"
            ]
        }
    }

    /// One pass on one connection (the command): every chain `selection` names asked about and applied.
    public func runOnce(_ selection: Selection, _ connection: PostgresConnection) throws -> Pass {
        var pass = Pass()
        var answered: Set<String> = []
        for chain in try chains(selection, connection) where !answered.contains(chain.key) {
            pass.asked += 1
            switch statuses(of: chain) {
            case .success(let outcomes):
                answered.formUnion(outcomes.map(\.chainKey))
                let applied = try apply(outcomes, connection)
                pass.count(applied)
            case .failure(let error):
                pass.failed += 1
                logger.error(
                    "subscription not refreshed",
                    metadata: [
                        "original_transaction_id": "\(chain.originalTransactionId)", "environment": "\(chain.environment)",
                        "error": "\(error)",
                    ]
                )
            }
        }
        return pass
    }

    /// Why a chain's answer is not applied.
    public struct RefreshError: Error, Sendable, Hashable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// One chain of Apple's answer as `receipt_subscription_refresh()` reads it: its transaction and renewal info
    /// verified, each for `chain`'s environment and app and for the chain the answer names; Apple's status with it.
    func outcome(
        of item: SubscriptionStatusesResponse.LastTransaction, chain: Chain, now: Date
    ) throws(RefreshError) -> NotificationOutcome {
        guard let signedTransaction = item.signedTransactionInfo, let signedRenewal = item.signedRenewalInfo else {
            throw RefreshError("a chain without signedTransactionInfo or signedRenewalInfo")
        }
        let transaction: SignedTransaction
        let renewal: SignedRenewalInfo
        do {
            transaction = try SignedTransaction(payload: try verified(signedTransaction, now: now))
            let renewalPayload = try verified(signedRenewal, now: now)
            do {
                renewal = try BoundedJSON.decode(SignedRenewalInfo.self, from: renewalPayload)
            } catch {
                throw RefreshError("the renewal info's payload does not decode: \(error)")
            }
        } catch let error as SignedDataError {
            throw RefreshError("a signed item did not verify: \(error.message)")
        } catch let error as RefreshError {
            throw error
        } catch {
            throw RefreshError("\(error)")
        }
        return try Self.outcome(
            transaction: transaction, renewal: renewal, status: item.status,
            answerChain: item.originalTransactionId, chain: chain
        )
    }

    /// The write-back of one chain of Apple's answer once its transaction and renewal info verified: each must be
    /// for `chain`'s environment and app and for the chain the answer names (`answerChain`), and the renewal info
    /// must have its signedDate (the order against what the row holds; online verification does not need one).
    static func outcome(
        transaction: SignedTransaction, renewal: SignedRenewalInfo, status: Int?, answerChain: String?, chain: Chain
    ) throws(RefreshError) -> NotificationOutcome {
        guard transaction.environment == chain.environment, renewal.environment == chain.environment else {
            throw RefreshError(
                "signed data for \(transaction.environment ?? "no environment") / "
                    + "\(renewal.environment ?? "no environment"), asked of \(chain.environment)"
            )
        }
        guard transaction.bundleId == chain.bundleId else {
            throw RefreshError("a signed transaction for \(transaction.bundleId ?? "no app"), asked for \(chain.bundleId)")
        }
        guard let original = transaction.originalTransactionId, renewal.originalTransactionId == original,
            answerChain == nil || answerChain == original
        else {
            throw RefreshError("the transaction, renewal info and answer name different purchase chains")
        }
        guard let signedDateMs = renewal.signedDateMs else {
            throw RefreshError("renewal info without signedDate")
        }
        return NotificationOutcome(
            kind: .verified,
            notification: NotificationOutcome.Facts(
                uuid: UUID().uuidString.lowercased(), type: Self.notificationType, environment: chain.environment,
                bundleId: chain.bundleId, signedDateMs: max(signedDateMs, transaction.signedDateMs ?? 0),
                status: status
            ),
            transaction: NotificationResult.transaction(transaction),
            renewal: NotificationResult.renewal(renewal)
        )
    }

    /// The payload of `jws` once its signature and chain held (test-environment data, never Apple's, refused).
    private func verified(_ jws: String, now: Date) throws -> [UInt8] {
        let verified = try verifier.verify(jws, now: now)
        guard verified.isSigned else { throw RefreshError("unsigned data in Apple's answer") }
        return verified.payload
    }

    /// The `notification_type` events of a refresh carry.
    public static let notificationType = "SUBSCRIPTION_STATUS"
}

extension SubscriptionRefresh.Chain {
    var key: String { environment + "/" + originalTransactionId }
}

extension NotificationOutcome {
    /// The chain a refresh's write-back is about, as `SubscriptionRefresh.Chain.key`.
    var chainKey: String {
        (notification?.environment ?? "") + "/" + (transaction?.originalTransactionId ?? "")
    }
}

extension SubscriptionRefresh.Pass {
    mutating func count(_ applied: [String?]) {
        if applied.contains(where: { $0 != nil }) { self.applied += 1 } else { unchanged += 1 }
    }
}

/// `work`'s own refresh: every `SUBSCRIPTIONS_REFRESH_MINUTES`, the chains whose period ended with no renewal and no
/// expiry seen (and nothing applied to them for as long), asked about off the maintenance loop, one pass at a time,
/// paced by the client's pacing (Apple's limits); the shared connection is held only for the statements.
public final class SubscriptionRefresher: Sendable {
    public let refresh: SubscriptionRefresh
    public let everySeconds: Double
    /// Chains per pass at most.
    public let batch: Int
    private let queue = DispatchQueue(label: "receipt-worker.subscription-refresh")
    private let running = DispatchGroup()
    private let nextRun: Mutex<Double>

    public init(refresh: SubscriptionRefresh, everyMinutes: Double, batch: Int = 500, firstRun: Double) {
        self.refresh = refresh
        everySeconds = everyMinutes * 60
        self.batch = batch
        nextRun = Mutex(firstRun)
    }

    /// When the next pass is due (`Worker.now()`'s clock).
    var nextRunAt: Double { nextRun.withLock { $0 } }

    /// Starts a pass when one is due and none is running.
    func tick(_ session: DatabaseSession, now: Double, stopping: @escaping @Sendable () -> Bool) {
        let due = nextRun.withLock { next in
            guard now >= next else { return false }
            next = now + everySeconds
            return true
        }
        guard due, running.wait(timeout: .now()) == .success else { return }
        running.enter()
        queue.async { [self] in
            defer { running.leave() }
            let selection = SubscriptionRefresh.Selection(
                staleHours: 0, quietMinutes: everySeconds / 60, limit: batch
            )
            let found = session.perform(giveUp: { true }) { store in try refresh.chains(selection, store.connection) }
            guard case .success(let chains) = found else {
                if case .failure(let error) = found {
                    refresh.logger.error("stale subscriptions not read", metadata: ["error": "\(error)"])
                }
                return
            }
            var pass = SubscriptionRefresh.Pass()
            // One answer covers every chain of the customer: those are not asked about again in this pass.
            var answered: Set<String> = []
            for chain in chains where !stopping() && !answered.contains(chain.key) {
                pass.asked += 1
                switch refresh.statuses(of: chain) {
                case .success(let outcomes):
                    answered.formUnion(outcomes.map(\.chainKey))
                    let applied = session.perform(giveUp: stopping) { store in
                        try refresh.apply(outcomes, store.connection)
                    }
                    if case .success(let statuses) = applied { pass.count(statuses) } else { pass.failed += 1 }
                case .failure(let error):
                    pass.failed += 1
                    refresh.logger.warning(
                        "subscription not refreshed",
                        metadata: ["original_transaction_id": "\(chain.originalTransactionId)", "error": "\(error)"]
                    )
                }
            }
            if pass.asked > 0 {
                refresh.logger.info(
                    "stale subscriptions refreshed",
                    metadata: [
                        "asked": "\(pass.asked)", "applied": "\(pass.applied)", "unchanged": "\(pass.unchanged)",
                        "failed": "\(pass.failed)",
                    ]
                )
            }
        }
    }

    /// Waits for a pass still running.
    func wait() {
        running.wait()
    }
}

extension Worker {
    /// `work`'s subscription refresh: with a Server API client and a verifier, and SUBSCRIPTIONS_REFRESH_MINUTES
    /// above 0; the first pass a minute after start (or one interval, when shorter).
    func subscriptionRefresher() -> SubscriptionRefresher? {
        guard let serverAPI, let signedData, configuration.subscriptionsRefreshMinutes > 0 else { return nil }
        return SubscriptionRefresher(
            refresh: SubscriptionRefresh(client: serverAPI, verifier: signedData),
            everyMinutes: configuration.subscriptionsRefreshMinutes,
            firstRun: Self.now() + min(configuration.subscriptionsRefreshMinutes * 60, 60)
        )
    }
}
