import AppStoreSignedData
import ReceiptQueue
import ReceiptRules

extension OutcomeDecider {
    /// The verdict on a verified (or refused) app transaction: `invalid_signature` when it did not verify (a retry
    /// when only the revocation check could not be made), `bundle_mismatch` when it is for another app than the
    /// job's (or one not ours), `sandbox_not_allowed` for a non-production one SANDBOX_POLICY refuses for this user,
    /// else verified, with what `receipt_app_transaction_credit()` records.
    public func outcome(
        for job: ClaimedJob, app: Result<SignedAppTransaction, SignedDataError>, random: @autoclosure () -> Double
    ) -> JobOutcome {
        let transaction: SignedAppTransaction
        switch app {
        case .failure(let error) where error.isRetryable:
            return JobOutcome(
                lease: job.lease, kind: .retry, error: error.message,
                retryInSeconds: retry.delay(afterAttempt: job.order.attempt, random: random()),
                failureCause: "revocation_check", maxAttempts: retry.maxAttempts
            )
        case .failure(let error):
            return reject(job, .invalidSignature, error.message)
        case .success(let verified):
            transaction = verified
        }
        guard let bundleId = transaction.bundleId, bundleId == job.order.bundleId, rules.bundleIds.contains(bundleId)
        else {
            return reject(
                job, .bundleMismatch,
                "the app transaction is for \(transaction.bundleId ?? "no app"), the order for \(job.order.bundleId)"
            )
        }
        guard let environment = transaction.receiptType.flatMap(PurchaseEnvironment.init(rawValue:)) else {
            return reject(
                job, .invalidSignature,
                "the app transaction names the environment \(transaction.receiptType ?? "none"), not one of Apple's"
            )
        }
        if environment != .production && !rules.sandboxPolicy.allows(userId: job.order.userId) {
            var outcome = reject(
                job, .sandboxNotAllowed,
                "the app transaction is from the \(environment.rawValue) environment, which SANDBOX_POLICY does not "
                    + "credit for this user"
            )
            outcome.environment = environment
            return outcome
        }
        var outcome = JobOutcome(
            lease: job.lease, kind: .verified, environment: environment, maxAttempts: retry.maxAttempts
        )
        outcome.appTransaction = AppTransactionRecord(
            appTransactionId: transaction.appTransactionId ?? "", bundleId: bundleId, appAppleId: transaction.appAppleId,
            originalApplicationVersion: transaction.originalApplicationVersion,
            originalPurchaseDateMs: transaction.originalPurchaseDateMs, originalPlatform: transaction.originalPlatform,
            applicationVersion: transaction.applicationVersion, preorderDateMs: transaction.preorderDateMs,
            receiptCreationDateMs: transaction.receiptCreationDateMs
        )
        return outcome
    }
}
