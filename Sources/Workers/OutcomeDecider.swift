import AppStoreClient
import AppStoreSignedData
import ReceiptQueue
import ReceiptRules

/// Turns what Apple said about a job's receipt into what is written back: a verdict from the rules, a retry
/// with backoff, or a configuration error that costs no attempt. Pure: no I/O, randomness passed in (and drawn only
/// for a retry's backoff).
public struct OutcomeDecider: Sendable {
    public var rules: RulesConfiguration
    public var retry: RetryPolicy

    public init(rules: RulesConfiguration, retry: RetryPolicy) {
        self.rules = rules
        self.retry = retry
    }

    public func outcome(for job: ClaimedJob, result: AppStoreResult, random: @autoclosure () -> Double) -> JobOutcome {
        let attempt = job.order.attempt
        switch result {
        case .receipt(let contents, let status):
            return verdict(for: job, contents: contents, appleStatus: status, random: random())
        case .invalidReceipt(let status):
            return reject(job, .invalidReceipt, "Apple answered \(AppleStatus.describe(status))", status: status)
        case .malformedData(let status) where attempt >= retry.malformedDataAttempts:
            return reject(
                job, .invalidReceipt, "Apple answered \(AppleStatus.describe(status)) \(attempt) times", status: status
            )
        case .malformedData(let status):
            return JobOutcome(
                lease: job.lease, kind: .retry, error: "Apple answered \(AppleStatus.describe(status))",
                appleStatus: status, retryInSeconds: retry.delay(afterAttempt: attempt, random: random()),
                maxAttempts: retry.maxAttempts
            )
        case .configurationError(let failure):
            // The attempt is given back, so the delay does not grow: the job waits at the base delay until the
            // configuration is fixed.
            return JobOutcome(
                lease: job.lease, kind: .configError, error: "configuration: \(failure)",
                appleStatus: failure.appleStatus, retryInSeconds: retry.delay(afterAttempt: 1, random: random()),
                maxAttempts: retry.maxAttempts
            )
        case .retryable(let failure):
            return JobOutcome(
                lease: job.lease, kind: .retry, error: failure.description, appleStatus: failure.appleStatus,
                retryInSeconds: retry.delay(
                    afterAttempt: attempt, retryAfterSeconds: failure.retryAfterSeconds, random: random()
                ),
                failureCause: failure.cause.rawValue, maxAttempts: retry.maxAttempts
            )
        }
    }

    /// What an App Store Server API call came to when it brought no value: a retry, a configuration error (no
    /// attempt counted), or, when Apple does not know the transaction (or refuses its id), `transaction_not_found`.
    /// nil for a success: the caller goes on with the value.
    public func outcome<Value>(
        for job: ClaimedJob, api result: ServerAPIResult<Value>, random: @autoclosure () -> Double
    ) -> JobOutcome? {
        switch result {
        case .success:
            return nil
        case .retryable(let failure):
            return outcome(for: job, result: .retryable(failure), random: random())
        case .configurationError(let failure):
            return outcome(for: job, result: .configurationError(failure), random: random())
        case .notFound(let failure), .rejected(let failure):
            return reject(job, .transactionNotFound, "App Store Server API: \(failure.message)", status: failure.appleStatus)
        }
    }

    /// The rules' verdict on transactions the App Store Server API returned, each verified.
    public func outcome(
        for job: ClaimedJob, verified transactions: Result<[SignedTransaction], SignedDataError>,
        environment: PurchaseEnvironment, random: @autoclosure () -> Double
    ) -> JobOutcome {
        switch transactions {
        case .success(let transactions):
            // Every transaction's bundle id, not only the first's: one of another app rejects the set.
            let contents = transactions.contents(environment: environment, bundleId: transactions.sharedBundleId)
            return verdict(for: job, contents: contents, appleStatus: nil, random: random())
        case .failure(let error):
            return outcome(for: job, signed: .failure(error), random: random())
        }
    }

    /// What a StoreKit 2 signed transaction says, once verified: a verdict from the rules. A signature or chain that
    /// does not hold is a rejection (`invalid_signature`); a revocation check that could not be made, a retry.
    public func outcome(
        for job: ClaimedJob, signed: Result<SignedTransaction, SignedDataError>, random: @autoclosure () -> Double
    ) -> JobOutcome {
        switch signed {
        case .success(let transaction):
            return verdict(for: job, contents: transaction.contents, appleStatus: nil, random: random())
        case .failure(let error) where error.isRetryable:
            return JobOutcome(
                lease: job.lease, kind: .retry, error: error.message,
                retryInSeconds: retry.delay(afterAttempt: job.order.attempt, random: random()),
                failureCause: "revocation_check", maxAttempts: retry.maxAttempts
            )
        case .failure(let error):
            return reject(job, .invalidSignature, error.message, status: nil)
        }
    }

    /// A Transaction History asked for the order's product that holds none of it (`VerdictRules.decideProductMissing`).
    public func productMissing(for job: ClaimedJob, environment: PurchaseEnvironment) -> JobOutcome {
        let verdict = VerdictRules.decideProductMissing(
            environment: environment, bundleId: job.order.bundleId, order: job.order, configuration: rules
        )
        return outcome(for: job, verdict: verdict, appleStatus: nil, random: 0)
    }

    /// Apple answered, but with part of what the job needs (a history cut by the page cap): no verdict, a retry that
    /// costs an attempt (a history that never fits ends `dead`, never decided from a part).
    public func partialAnswer(for job: ClaimedJob, _ detail: String, random: Double) -> JobOutcome {
        JobOutcome(
            lease: job.lease, kind: .retry, error: detail,
            retryInSeconds: retry.delay(afterAttempt: job.order.attempt, random: random),
            failureCause: "history_truncated", maxAttempts: retry.maxAttempts
        )
    }

    /// The rules' verdict on what Apple (a receipt, a signed transaction) says was bought.
    func verdict(
        for job: ClaimedJob, contents: ReceiptContents, appleStatus: Int? = nil, random: @autoclosure () -> Double
    ) -> JobOutcome {
        let verdict = VerdictRules.decide(receipt: contents, order: job.order, configuration: rules)
        return outcome(for: job, verdict: verdict, appleStatus: appleStatus, random: random())
    }

    private func outcome(
        for job: ClaimedJob, verdict: Verdict, appleStatus: Int?, random: @autoclosure () -> Double
    ) -> JobOutcome {
        var outcome = JobOutcome(
            lease: job.lease, kind: .verified, appleStatus: appleStatus, environment: verdict.environment,
            cancelled: verdict.cancelledPurchases, maxAttempts: retry.maxAttempts
        )
        switch verdict.decision {
        case .credit(let candidates):
            outcome.candidates = candidates
            // The job's own purchase (its first candidate, nearly always the one credited) is not offered again.
            outcome.seen = verdict.seenPurchases
        case .reject(let reason, let detail):
            outcome.kind = .rejected
            outcome.reason = reason
            outcome.error = detail
            outcome.seen = verdict.seenPurchases
        case .retry(let detail):
            outcome.kind = .retry
            outcome.error = detail
            outcome.retryInSeconds = retry.delay(afterAttempt: job.order.attempt, random: random())
        }
        return outcome
    }

    /// Something on our side stops the job (not the purchase): no verdict, and the attempt is given back.
    public func configurationError(_ job: ClaimedJob, _ detail: String, random: Double) -> JobOutcome {
        JobOutcome(
            lease: job.lease, kind: .configError, error: "configuration: \(detail)",
            retryInSeconds: retry.delay(afterAttempt: 1, random: random), maxAttempts: retry.maxAttempts
        )
    }

    /// A receipt that cannot be sent to Apple at all.
    public func malformedInput(_ job: ClaimedJob, problem: String) -> JobOutcome {
        reject(job, .malformedInput, problem, status: nil)
    }

    func reject(_ job: ClaimedJob, _ reason: RejectionReason, _ detail: String, status: Int? = nil) -> JobOutcome {
        JobOutcome(
            lease: job.lease, kind: .rejected, reason: reason, error: detail, appleStatus: status,
            maxAttempts: retry.maxAttempts
        )
    }
}

extension AppStoreResult {
    /// Whether Apple (or whatever answers for it) gave an answer: what the circuit breaker counts.
    public var appleAnswered: Bool {
        if case .retryable = self { return false }
        return true
    }
}
