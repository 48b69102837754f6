import AppReceipt
import AppStoreModel
import Foundation

/// Decides the reply to one verifyReceipt request the way Apple would, plus the faults the scenario or the configured
/// rates ask for. No I/O: the clock arrives as `now`, randomness as a generator.
struct VerifyReceiptResponder: Sendable {
    let state: FakeAppStoreState

    /// The reply to a request body, and the name it is counted under in the statistics.
    func reply<Generator: RandomNumberGenerator>(
        toBody body: [UInt8],
        endpoint: Endpoint,
        faults rates: FaultRates,
        now: Int64,
        using generator: inout Generator
    ) -> (reply: FakeReply, answer: String) {
        let request = try? VerifyReceiptRequest.decode(body)
        let receipt = request.map { SubmittedReceipt(receiptData: $0.receiptData) }

        var fault: ScenarioReceipt.Fault?
        if let request, case .scenario(let scenario)? = receipt, !scenario.faults.isEmpty {
            fault = state.nextScenarioFault(receiptData: request.receiptData, faults: scenario.faults)
        }
        if fault == nil {
            fault = rates.draw(using: &generator)
        }

        func normal() -> VerifyReceiptResponse {
            guard let request, let receipt, !request.receiptData.isEmpty else {
                return VerifyReceiptResponse(status: 21000)
            }
            return response(to: request, receipt: receipt, endpoint: endpoint, now: now)
        }
        if let fault {
            return (FaultInjection.reply(for: fault, normal: normal), fault.rawValue)
        }
        let answer = normal()
        return (.answer(answer), String(answer.status))
    }

    /// Apple's answer to a readable request, without faults.
    func response(
        to request: VerifyReceiptRequest,
        receipt: SubmittedReceipt,
        endpoint: Endpoint,
        now: Int64
    ) -> VerifyReceiptResponse {
        switch receipt {
        case .unreadable:
            return VerifyReceiptResponse(status: 21002)
        case .app(let appReceipt):
            return response(to: request, appReceipt: appReceipt, endpoint: endpoint, now: now)
        case .scenario(let scenario):
            return response(to: request, scenario: scenario, endpoint: endpoint, now: now)
        }
    }

    private func response(
        to request: VerifyReceiptRequest,
        appReceipt: AppReceipt,
        endpoint: Endpoint,
        now: Int64
    ) -> VerifyReceiptResponse {
        let inApp = appReceipt.purchases.map(\.transaction)
        if let rejection = rejection(
            environment: appReceipt.environment, isSandbox: appReceipt.environment != "Production",
            password: request.password, inApp: inApp, latest: nil, endpoint: endpoint
        ) {
            return rejection
        }
        let info = ReceiptInfo(
            bundleId: appReceipt.bundleId,
            applicationVersion: appReceipt.applicationVersion,
            originalApplicationVersion: appReceipt.originalApplicationVersion,
            receiptType: appReceipt.environment,
            receiptCreationDateMs: appReceipt.creationDate,
            requestDateMs: now,
            inApp: inApp
        )
        return successfulResponse(
            receipt: info, latest: nil, receiptData: request.receiptData, endpoint: endpoint
        )
    }

    private func response(
        to request: VerifyReceiptRequest,
        scenario: ScenarioReceipt,
        endpoint: Endpoint,
        now: Int64
    ) -> VerifyReceiptResponse {
        if let rejection = rejection(
            environment: scenario.environment, isSandbox: scenario.isSandbox, password: request.password,
            inApp: scenario.inApp, latest: scenario.latestReceiptInfo, endpoint: endpoint
        ) {
            return rejection
        }
        let info = ReceiptInfo(
            bundleId: scenario.bundleId,
            receiptType: scenario.isSandbox ? "ProductionSandbox" : "Production",
            receiptCreationDateMs: scenario.inApp.compactMap(\.purchaseDateMs).max() ?? now,
            requestDateMs: now,
            inApp: scenario.inApp
        )
        var answer = successfulResponse(
            receipt: info, latest: scenario.latestReceiptInfo, receiptData: request.receiptData, endpoint: endpoint
        )
        if let status = scenario.status, status != 0 {
            if status == 21006 {
                // "This receipt is valid but the subscription has expired": Apple still sends the receipt.
                answer.status = status
            } else {
                answer = VerifyReceiptResponse(
                    status: status,
                    environment: endpoint.environment,
                    isRetryable: FaultInjection.isRetryable(status) ? true : nil
                )
            }
        }
        return answer
    }

    /// Apple's refusals, in its order: 21003 for Xcode (StoreKit testing) receipts, which Apple did not sign; 21007
    /// for a sandbox receipt sent to production, 21008 for a production receipt sent to the sandbox; 21004 when a
    /// shared secret is configured and the request's differs, or is missing for a receipt with subscriptions.
    private func rejection(
        environment: String?,
        isSandbox: Bool,
        password: String?,
        inApp: [InAppTransaction],
        latest: [InAppTransaction]?,
        endpoint: Endpoint
    ) -> VerifyReceiptResponse? {
        if environment == "Xcode" {
            return VerifyReceiptResponse(status: 21003)
        }
        switch (isSandbox, endpoint) {
        case (true, .production): return VerifyReceiptResponse(status: 21007)
        case (false, .sandbox): return VerifyReceiptResponse(status: 21008)
        default: break
        }
        guard let secret = state.sharedSecret else { return nil }
        if let password, !password.isEmpty {
            return password == secret ? nil : VerifyReceiptResponse(status: 21004)
        }
        let hasSubscriptions = inApp.contains { $0.expiresDateMs != nil } || !(latest ?? []).isEmpty
        return hasSubscriptions ? VerifyReceiptResponse(status: 21004) : nil
    }

    /// Status 0 with the receipt, and for subscriptions `latest_receipt_info` (given, or the receipt's entries with
    /// an expiry, oldest first as in Apple's legacy answers), `pending_renewal_info` and `latest_receipt`.
    private func successfulResponse(
        receipt: ReceiptInfo,
        latest: [InAppTransaction]?,
        receiptData: String,
        endpoint: Endpoint
    ) -> VerifyReceiptResponse {
        let subscriptions =
            latest
            ?? (receipt.inApp ?? []).filter { $0.expiresDateMs != nil }
            .sorted { ($0.purchaseDateMs ?? 0) < ($1.purchaseDateMs ?? 0) }
        guard !subscriptions.isEmpty else {
            return VerifyReceiptResponse(status: 0, environment: endpoint.environment, receipt: receipt)
        }
        return VerifyReceiptResponse(
            status: 0,
            environment: endpoint.environment,
            receipt: receipt,
            latestReceiptInfo: subscriptions,
            pendingRenewalInfo: Self.pendingRenewals(subscriptions),
            latestReceipt: receiptData
        )
    }

    /// One renewal per subscription (original transaction id), naming the product of its latest period, auto-renew on.
    static func pendingRenewals(_ subscriptions: [InAppTransaction]) -> [PendingRenewalInfo] {
        var latestByOriginal = [String: InAppTransaction]()
        var order = [String]()
        for transaction in subscriptions {
            let key = transaction.originalTransactionId ?? transaction.transactionId ?? ""
            if let current = latestByOriginal[key] {
                if (transaction.purchaseDateMs ?? 0) >= (current.purchaseDateMs ?? 0) {
                    latestByOriginal[key] = transaction
                }
            } else {
                latestByOriginal[key] = transaction
                order.append(key)
            }
        }
        return order.compactMap { key in
            latestByOriginal[key].map {
                PendingRenewalInfo(
                    productId: $0.productId,
                    autoRenewProductId: $0.productId,
                    originalTransactionId: $0.originalTransactionId ?? $0.transactionId,
                    autoRenewStatus: "1"
                )
            }
        }
    }
}
