import AppReceipt
import AppStoreClient
import AppStoreSignedData
import Foundation
import ReceiptQueue
import ReceiptRules

/// The StoreKit 2 paths: signed transactions (verified here, then confirmed with the App Store Server API when it is
/// configured), transaction ids (looked up), and receipts read through the App Store Server API (Apple's way off
/// verifyReceipt). Every path ends in the same rules and ledger as a receipt.
extension Worker {
    /// A signed transaction that verified; with confirmation on, the App Store's current copy of it (a refund since
    /// the device signed it shows there), else the verdict on the device's copy.
    func confirm(_ job: ClaimedJob, _ transaction: SignedTransaction) {
        guard let serverAPI, configuration.confirmSignedTransactions, let transactionId = transaction.transactionId
        else {
            state.submit(decider.outcome(for: job, signed: .success(transaction), random: Double.random(in: 0..<1)))
            return
        }
        let environment: AppStoreEndpoint = transaction.environment == "Production" ? .production : .sandbox
        serverAPI.transactionInfo(
            transactionId: transactionId, bundleId: job.order.bundleId, environment: environment
        ) { [self] result, calls in
            answered(job, result, calls) { jws in [jws] }
        }
    }

    /// A job that gives only a transaction id: Get Transaction Info, production first, then the sandbox once.
    func lookUpTransaction(_ job: ClaimedJob) {
        guard let serverAPI else {
            cannotVerify(job, "transaction_id jobs need the App Store Server API (APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, "
                + "APPSTORE_PRIVATE_KEY_FILE)")
            return
        }
        guard let transactionId = job.order.clientTransactionId, !transactionId.isEmpty else {
            state.submit(decider.malformedInput(job, problem: "the job has no transaction_id"))
            return
        }
        serverAPI.transactionInfo(transactionId: transactionId, bundleId: job.order.bundleId) { [self] result, calls in
            answered(job, result, calls) { jws in [jws] }
        }
    }

    /// A receipt read through the App Store Server API: any transaction id from the receipt's own payload (not
    /// trusted: what Apple returns for it is), then the customer's Transaction History, every entry verified.
    func readReceiptThroughAPI(_ job: ClaimedJob, _ serverAPI: ServerAPIClient, receiptData: String) {
        let receipt: AppReceipt
        do {
            receipt = try AppReceipt.decode(base64: receiptData)
        } catch {
            state.submit(decider.reject(job, .invalidReceipt, "the receipt is not an App Store receipt: \(error)"))
            return
        }
        guard let transactionId = receipt.purchases.lazy.compactMap(\.transactionId).first(where: { !$0.isEmpty })
        else {
            // Nothing to ask Apple about. The receipt's own fields are not trusted, so the verdict is the rules' on
            // "no purchases" for the order's app (a retry while Apple's copy may lag, then no_purchases): nothing
            // can be credited from it either way.
            let contents = ReceiptContents(
                environment: receipt.environment == "Production" ? .production : .sandbox,
                bundleId: job.order.bundleId, entries: []
            )
            state.submit(decider.verdict(for: job, contents: contents, random: Double.random(in: 0..<1)))
            return
        }
        serverAPI.transactionHistory(transactionId: transactionId, bundleId: job.order.bundleId) { [self] result, calls in
            answered(job, result, calls) { history in history.signedTransactions }
        }
    }

    /// One App Store Server API answer: its calls counted, then the verdict on what it signed, or what its failure
    /// means for the job.
    private func answered<Value>(
        _ job: ClaimedJob, _ result: ServerAPIResult<Value>, _ calls: [AppStoreCall],
        signed: (Value) -> [String]
    ) {
        for call in calls { events.appleCall(call) }
        if case .retryable = result {
            breaker.record(answered: false, now: Self.now())
        } else {
            breaker.record(answered: true, now: Self.now())
        }
        let random = Double.random(in: 0..<1)
        if let outcome = decider.outcome(for: job, api: result, random: random) {
            if outcome.kind == .configError {
                logger.critical(
                    "the App Store Server API refused our configuration: no verdict, no attempt counted; fix it now",
                    metadata: ["job_id": "\(job.id)", "error": "\(outcome.error ?? "")"]
                )
            }
            state.submit(outcome)
            return
        }
        guard case .success(let value, let environment) = result else { return }
        let verified = Result { () throws(SignedDataError) -> [SignedTransaction] in
            guard let signedData else {
                throw SignedDataError(.untrustedChain, "signed data is not verified by this worker")
            }
            return try signed(value).map { jws throws(SignedDataError) in try SignedTransaction.verified(jws, by: signedData) }
        }
        state.submit(
            decider.outcome(for: job, verified: verified, environment: environment.environment, random: random)
        )
    }
}
