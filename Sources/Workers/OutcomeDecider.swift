import AppStoreClient
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
            let verdict = VerdictRules.decide(receipt: contents, order: job.order, configuration: rules)
            var outcome = JobOutcome(
                lease: job.lease, kind: .verified, appleStatus: status, environment: verdict.environment,
                cancelled: verdict.cancelledPurchases, maxAttempts: retry.maxAttempts
            )
            switch verdict.decision {
            case .credit(let candidates):
                outcome.candidates = candidates
            case .reject(let reason, let detail):
                outcome.kind = .rejected
                outcome.reason = reason
                outcome.error = detail
            case .retry(let detail):
                outcome.kind = .retry
                outcome.error = detail
                outcome.retryInSeconds = retry.delay(afterAttempt: attempt, random: random())
            }
            return outcome
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
                maxAttempts: retry.maxAttempts
            )
        }
    }

    /// A receipt that cannot be sent to Apple at all.
    public func malformedInput(_ job: ClaimedJob, problem: String) -> JobOutcome {
        reject(job, .malformedInput, problem, status: nil)
    }

    private func reject(_ job: ClaimedJob, _ reason: RejectionReason, _ detail: String, status: Int?) -> JobOutcome {
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
