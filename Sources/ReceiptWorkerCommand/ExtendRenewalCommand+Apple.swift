import AppStoreClient
import AppStoreModel
import ConsoleOutput
import Foundation
import PostgresClient
import ReceiptQueue

extension ExtendRenewalCommand {
    /// Extend a Subscription Renewal Date: recorded, asked, Apple's answer recorded.
    func extendOne(
        _ id: String, days: Int, reason: Int, target: Target, client: ServerAPIClient, record: ExtensionRequests
    ) throws -> Report {
        let requestId = UUID().uuidString.lowercased()
        try record.request(
            requestId, scope: "one", target: target, originalTransactionId: id, productId: nil, storefronts: nil,
            days: days, reason: reason
        )
        var report = Report(
            requestIdentifier: requestId, scope: "one", environment: target.environment, bundleId: target.bundleId,
            originalTransactionId: id, productId: nil, days: days, reason: reason
        )
        let body = RenewalExtension.Request(extendByDays: days, extendReasonCode: reason, requestIdentifier: requestId)
        let answer = Self.retrying { client.extendRenewalDate(originalTransactionId: id, body, bundleId: target.bundleId, environment: target.endpoint).0 }
        switch answer {
        case .success(let response, _):
            let effective = response.effectiveDate.map { Date(timeIntervalSince1970: Double($0) / 1000) }
            report.state = response.success == true ? "extended" : "failed"
            report.effectiveAt = effective.map(Self.iso8601)
            report.webOrderLineItemId = response.webOrderLineItemId
            if response.success != true { report.error = "Apple did not extend it (success false)" }
            report.state = try record.result(
                requestId, state: report.state, error: report.error, effectiveAt: report.effectiveAt,
                webOrderLineItemId: response.webOrderLineItemId
            ) ?? report.state
        case .failure(let state, let message):
            report.state = try record.result(requestId, state: state, error: message) ?? state
            report.error = message
        }
        return report
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: recorded, asked, pending once Apple took it.
    func extendAll(
        _ product: String, days: Int, reason: Int, storefronts: [String]?, target: Target, client: ServerAPIClient,
        record: ExtensionRequests
    ) throws -> Report {
        let requestId = UUID().uuidString.lowercased()
        try record.request(
            requestId, scope: "mass", target: target, originalTransactionId: nil, productId: product,
            storefronts: storefronts, days: days, reason: reason
        )
        var report = Report(
            requestIdentifier: requestId, scope: "mass", environment: target.environment, bundleId: target.bundleId,
            originalTransactionId: nil, productId: product, days: days, reason: reason
        )
        report.storefrontCountryCodes = storefronts
        let body = RenewalExtension.MassRequest(
            extendByDays: days, extendReasonCode: reason, requestIdentifier: requestId, productId: product,
            storefrontCountryCodes: storefronts
        )
        let answer = Self.retrying {
            client.massExtendRenewalDate(body, bundleId: target.bundleId, environment: target.endpoint).0
        }
        switch answer {
        case .success:
            report.state = try record.result(requestId, state: "pending") ?? "pending"
        case .failure(let state, let message):
            report.state = try record.result(requestId, state: state, error: message) ?? state
            report.error = message
        }
        return report
    }

    /// Get Status of Subscription Renewal Date Extensions; what it says is recorded when the request is ours.
    func askStatus(
        _ requestId: String, product: String, target: Target, client: ServerAPIClient, record: ExtensionRequests
    ) throws -> Report {
        var report = Report(
            requestIdentifier: requestId, scope: "mass", environment: target.environment, bundleId: target.bundleId,
            originalTransactionId: nil, productId: product, days: nil, reason: nil
        )
        let answer = Self.retrying {
            client.massExtensionStatus(
                productId: product, requestIdentifier: requestId, bundleId: target.bundleId,
                environment: target.endpoint
            ).0
        }
        switch answer {
        case .success(let status, _):
            let complete = status.complete == true
            let completed = status.completeDate.map { Self.iso8601(Date(timeIntervalSince1970: Double($0) / 1000)) }
            report.succeededCount = status.succeededCount
            report.failedCount = status.failedCount
            report.completedAt = completed
            report.state = complete ? "complete" : "pending"
            if let recorded = try record.result(
                requestId, state: report.state, succeeded: status.succeededCount, failed: status.failedCount,
                completedAt: completed
            ) {
                report.state = recorded
            }
        case .failure(_, let message):
            report.state = "unknown"
            report.error = message
        }
        return report
    }

    /// An answer, or the state to record for the failure and its message.
    enum Answer<Value> {
        case success(Value, AppStoreEndpoint)
        case failure(state: String, message: String)
    }

    /// `call` until Apple answers, its "try again" answers retried (`attempts` in all, Apple's Retry-After or 1, 2 s,
    /// at most 10 s) with the same request.
    static func retrying<Value>(_ call: () -> ServerAPIResult<Value>) -> Answer<Value> {
        switch AppleCallRetry.retrying(attempts: attempts, call) {
        case .success(let value, let answered):
            return .success(value, answered)
        case .retryable(let failure):
            return .failure(state: "unanswered", message: "no answer after \(attempts) attempts: \(failure.message)")
        case .notFound(let failure):
            return .failure(state: "refused", message: "Apple does not know it: \(failure.message)")
        case .rejected(let failure):
            return .failure(state: "refused", message: "Apple refused it: \(failure.message)")
        case .configurationError(let failure):
            return .failure(state: "refused", message: "our configuration: \(failure.message)")
        }
    }

    static func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// What was asked and what came of it, for the terminal or as JSON.
    struct Report: Encodable {
        var requestIdentifier: String
        var scope: String
        var environment: String
        var bundleId: String
        var originalTransactionId: String?
        var productId: String?
        var days: Int?
        var reason: Int?
        var storefrontCountryCodes: [String]?
        var state = "sending"
        var effectiveAt: String?
        var webOrderLineItemId: String?
        var succeededCount: Int64?
        var failedCount: Int64?
        var completedAt: String?
        var error: String?

        init(
            requestIdentifier: String, scope: String, environment: String, bundleId: String,
            originalTransactionId: String?, productId: String?, days: Int?, reason: Int?
        ) {
            self.requestIdentifier = requestIdentifier
            self.scope = scope
            self.environment = environment
            self.bundleId = bundleId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.days = days
            self.reason = reason
        }

        /// Exit 1: Apple refused, did not extend, or did not answer.
        var failed: Bool { ["failed", "refused", "unanswered", "unknown"].contains(state) }

        var text: String {
            let what = originalTransactionId.map { "subscription \($0)" } ?? "all subscribers of \(productId ?? "?")"
            var lines = ["request \(requestIdentifier): \(what) of \(bundleId) (\(environment)): \(state)"]
            if let days, let reason { lines.append("by \(days) days, reason \(reason)") }
            if let storefrontCountryCodes { lines.append("storefronts: " + storefrontCountryCodes.joined(separator: " ")) }
            if let effectiveAt { lines.append("new expiry: \(effectiveAt)") }
            if let succeededCount, let failedCount {
                lines.append("succeeded \(succeededCount), failed \(failedCount)"
                    + (completedAt.map { ", complete at \($0)" } ?? ""))
            }
            if state == "pending", let productId {
                lines.append("Apple works through it: receipt-worker extend-renewal --status \(requestIdentifier) "
                    + "--product \(productId)")
            }
            if let error { lines.append("error: \(error)") }
            return lines.map { TerminalText.escaped($0) }.joined(separator: "\n")
        }
    }
}

/// receipt_renewal_extensions, written through its two functions.
struct ExtensionRequests {
    let connection: PostgresConnection

    /// receipt_renewal_extension_request(): refused (bad days, reason, app or product) as a configuration error.
    func request(
        _ requestId: String, scope: String, target: ExtendRenewalCommand.Target, originalTransactionId: String?,
        productId: String?, storefronts: [String]?, days: Int, reason: Int
    ) throws {
        do {
            _ = try connection.query(
                "SELECT receipt_renewal_extension_request($1, $2, $3, $4, $5, $6, $7::text[], $8::integer, $9::integer)",
                [
                    requestId, scope, target.environment, target.bundleId, originalTransactionId, productId,
                    storefronts.map(PostgresArray.text), String(days), String(reason),
                ]
            )
        } catch let error as PostgresError where error.sqlState == "22023" {
            throw ConfigurationError(
                .invalid, "nothing sent to Apple: " + error.message + (error.hint.map { " (\($0))" } ?? "")
            )
        } catch let error as PostgresError {
            throw CommandFailure("nothing sent to Apple: the request could not be recorded: \(error.message)")
        }
    }

    /// receipt_renewal_extension_result(): the row's state after (nil: no request here has that id).
    @discardableResult
    func result(
        _ requestId: String, state: String, error: String? = nil, effectiveAt: String? = nil,
        webOrderLineItemId: String? = nil, succeeded: Int64? = nil, failed: Int64? = nil, completedAt: String? = nil
    ) throws -> String? {
        do {
            let rows = try connection.query(
                """
                SELECT receipt_renewal_extension_result($1, $2, $3, $4::timestamptz, $5, $6::bigint, $7::bigint,
                                                        $8::timestamptz) AS state
                """,
                [
                    requestId, state, error, effectiveAt, webOrderLineItemId, succeeded.map(String.init),
                    failed.map(String.init), completedAt,
                ]
            )
            return rows[0, "state"]
        } catch let failure as PostgresError {
            throw CommandFailure(
                "Apple answered request \(requestId) (\(state)), but the answer could not be recorded: "
                    + failure.message
            )
        }
    }
}
