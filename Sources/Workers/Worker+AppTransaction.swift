import AppStoreSignedData
import ReceiptQueue

extension Worker {
    /// StoreKit's app transaction: its signature and chain checked first (nothing in it is read before), then its
    /// app and environment (`OutcomeDecider`); a verified one is recorded by `receipt_complete()`, once per
    /// appTransactionId. On the verification queue, off the claim loop.
    func verifyAppTransaction(_ job: ClaimedJob) {
        guard let signedData else {
            cannotVerify(job, "app transactions are not verified by this worker")
            return
        }
        verification.async { [self] in
            guard let jws = job.signedTransaction, !jws.isEmpty else {
                state.submit(decider.malformedInput(job.withoutInput, problem: "signed_app_transaction is empty"))
                return
            }
            let verified = Result { () throws(SignedDataError) -> SignedAppTransaction in
                try signedData.verifyAppTransaction(jws)
            }
            state.submit(decider.outcome(for: job.withoutInput, app: verified, random: Double.random(in: 0..<1)))
        }
    }
}
