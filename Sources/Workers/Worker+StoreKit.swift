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
        // Xcode and LocalTesting purchases are unknown to the App Store Server API: their verdict is the rules' on them.
        guard let serverAPI, configuration.confirmSignedTransactions, let transactionId = transaction.transactionId,
            transaction.purchaseEnvironment == .production || transaction.purchaseEnvironment == .sandbox
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
        // A bare transaction id proves only that the purchase exists for this app, not who made it: anyone who saw
        // the id can send it. Under APPSTORE_REQUIRE_ACCOUNT_TOKEN the order must name the account token the app
        // passed to purchase(options:), and Apple's copy of the transaction must carry that same token.
        var requiredToken: String?
        if configuration.requireAccountToken {
            guard let token = job.order.appAccountToken, !token.isEmpty else {
                state.submit(
                    decider.reject(
                        job, .accountMismatch,
                        "APPSTORE_REQUIRE_ACCOUNT_TOKEN is on: a job given only a transaction_id needs the "
                            + "app_account_token the app passed to purchase(options:)"
                    )
                )
                return
            }
            requiredToken = token.lowercased()
        }
        serverAPI.transactionInfo(transactionId: transactionId, bundleId: job.order.bundleId) {
            [self, requiredToken] result, calls in
            answered(job, result, calls, requiredAccountToken: requiredToken) { jws in [jws] }
        }
    }

    /// A receipt read through the App Store Server API: its PKCS#7 signature verified to Apple's root (else
    /// `invalid_receipt`: an unsigned or re-signed receipt could name anyone's transaction), then a transaction id from
    /// its signed payload, then the customer's Transaction History, every entry verified. Off the claim loop, on the
    /// verification queue: an RSA check per receipt.
    func readReceiptThroughAPI(_ job: ClaimedJob, _ serverAPI: ServerAPIClient, receiptData: String) {
        verification.async { [self] in
            let receipt: AppReceipt
            do throws(ReceiptSignatureError) {
                receipt = try configuration.receiptSignature.verifiedReceipt(base64: receiptData)
            } catch {
                state.submit(
                    decider.reject(job, .invalidReceipt, "the receipt is not an App Store receipt: \(error.message)")
                )
                return
            }
            askAPI(job, serverAPI, about: receipt)
        }
    }

    /// The signed receipt's first transaction id, then its customer's Transaction History: the part the job needs
    /// (`HistoryReading`), newest first; a history the page cap cut short is retried, never decided on.
    private func askAPI(_ job: ClaimedJob, _ serverAPI: ServerAPIClient, about receipt: AppReceipt) {
        guard let transactionId = receipt.purchases.lazy.compactMap(\.transactionId).first(where: { !$0.isEmpty })
        else {
            // Nothing to ask Apple about. The verdict is the rules' on "no purchases" for the order's app (a retry
            // while Apple's copy may lag, then no_purchases): nothing can be credited from it either way.
            let contents = ReceiptContents(
                environment: receipt.environment == "Production" ? .production : .sandbox,
                bundleId: job.order.bundleId, entries: []
            )
            state.submit(decider.verdict(for: job, contents: contents, random: Double.random(in: 0..<1)))
            return
        }
        let reading = HistoryReading(order: job.order, rules: configuration.rules)
        serverAPI.transactionHistory(
            transactionId: transactionId, bundleId: job.order.bundleId, query: reading.query, until: reading.until
        ) { [self] result, calls in
            guard case .success(let history, let environment) = result else {
                return answered(job, result, calls) { history in history.signedTransactions }
            }
            switch reading.next(after: history, pageCap: serverAPI.configuration.maxHistoryPages) {
            case .decide:
                answered(job, result, calls) { history in history.signedTransactions }
            case .retry(let detail):
                counted(calls, answered: true)
                state.submit(decider.partialAnswer(for: job, detail, random: Double.random(in: 0..<1)))
            case .productMissing:
                counted(calls, answered: true)
                state.submit(decider.productMissing(for: job, environment: environment.environment))
            case .askWithoutStartDate:
                counted(calls, answered: true)
                serverAPI.transactionHistory(
                    transactionId: transactionId, bundleId: job.order.bundleId, query: reading.withoutStartDate,
                    environment: environment, until: { _ in true }
                ) { [self] result, calls in
                    if case .success(let newest, let environment) = result, newest.signedTransactions.isEmpty {
                        counted(calls, answered: true)
                        return state.submit(decider.productMissing(for: job, environment: environment.environment))
                    }
                    // Purchases of the product before the order: the rules say `transaction_not_found` of them.
                    answered(job, result, calls) { history in history.signedTransactions }
                }
            }
        }
    }

    /// Counts Apple calls, and tells the circuit breaker whether Apple answered.
    private func counted(_ calls: [AppStoreCall], answered: Bool) {
        for call in calls { events.appleCall(call) }
        breaker.record(answered: answered, now: Self.now())
    }

    /// One App Store Server API answer: its calls counted, then the verdict on what it signed, or what its failure
    /// means for the job.
    private func answered<Value>(
        _ job: ClaimedJob, _ result: ServerAPIResult<Value>, _ calls: [AppStoreCall],
        requiredAccountToken: String? = nil, signed: (Value) -> [String]
    ) {
        if case .retryable = result {
            counted(calls, answered: false)
        } else {
            counted(calls, answered: true)
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
        if let requiredAccountToken, case .success(let transactions) = verified,
            let other = transactions.first(where: { $0.appAccountToken != requiredAccountToken })
        {
            state.submit(
                decider.reject(
                    job, .accountMismatch,
                    "APPSTORE_REQUIRE_ACCOUNT_TOKEN is on: transaction \(other.transactionId ?? "?") carries "
                        + (other.appAccountToken.map { "appAccountToken \($0)" } ?? "no appAccountToken")
                        + ", not the order's \(requiredAccountToken)"
                )
            )
            return
        }
        state.submit(
            decider.outcome(for: job, verified: verified, environment: environment.environment, random: random)
        )
    }
}
