import AppStoreClient
import AppStoreModel
import Foundation
import PostgresClient
import ThreadSupport

/// `receipt-worker notifications test`'s check of the whole notification path: Apple's Request a Test Notification,
/// then, until the TEST notification is applied or `timeout` passes, Get Test Notification Status (Apple's side: did
/// it reach the URL?) and this database (did the receiver store it, did a worker apply it?). Ends at the first step
/// that failed for good.
struct NotificationSetupCheck {
    /// How the check ended: passed, or the step that failed (the `result` recorded in receipt_notification_tests).
    enum Step: String, Encodable {
        case passed
        /// Apple refused the request: our key, key id, issuer id or app (401, 403, 4040003), or no notifications URL
        /// in App Store Connect for this environment (4040007).
        case appleRefused = "apple_refused"
        /// Apple did not answer (5xx, 429, no connection) after `attempts` tries.
        case appleUnavailable = "apple_unavailable"
        /// Apple could not deliver it to the URL (its sendAttemptResult), or made no attempt in time.
        case notDelivered = "not_delivered"
        /// Apple delivered it (SUCCESS), but this database never stored it: the URL leads elsewhere.
        case notStored = "not_stored"
        /// Stored, but no worker applied it in time (or a worker rejected it).
        case notApplied = "not_applied"

        /// The command's exit status for this ending.
        var exitStatus: Int32 {
            switch self {
            case .passed: 0
            case .appleUnavailable: 1
            case .appleRefused: 5
            case .notDelivered: 6
            case .notStored: 7
            case .notApplied: 8
            }
        }
    }

    /// What the check found, printed and recorded.
    struct Report: Encodable {
        var result: Step
        var environment: String
        var bundleId: String
        var testNotificationToken: String?
        /// Apple's last sendAttemptResult, once it reported one.
        var sendAttemptResult: String?
        /// The TEST notification's row in receipt_notifications, once stored; its state and reason.
        var notificationId: Int64?
        var notificationState: String?
        var notificationReason: String?
        var seconds: Double
        var detail: String
    }

    /// The TEST notification's row here (`receipt_notification_test_lookup()`).
    struct StoredNotification {
        var id: Int64
        var state: String
        var reason: String?
        var lastError: String?
    }

    let client: ServerAPIClient
    let bundleId: String
    let environment: AppStoreEndpoint
    let timeoutSeconds: Double
    /// Where the TEST notification is in this database, by its signed payload.
    let lookup: (String) throws -> StoredNotification?
    /// Attempts at most for Apple's "try again" answers to the request.
    static let attempts = 3
    /// How often Apple's status and the database are looked at while waiting.
    static let pollSeconds = 0.5

    var environmentName: String { environment == .production ? "Production" : "Sandbox" }

    func run() throws -> Report {
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(timeoutSeconds * 1000))
        var report = Report(
            result: .passed, environment: environmentName, bundleId: bundleId, seconds: 0, detail: ""
        )
        func finish(_ step: Step, _ detail: String) -> Report {
            report.result = step
            report.detail = detail
            report.seconds = ((ContinuousClock.now - started).seconds * 10).rounded() / 10
            return report
        }
        let token: String
        switch requestToken() {
        case .success(let value):
            token = value
        case .failure(let failure):
            return finish(failure.step, failure.detail)
        }
        report.testNotificationToken = token
        var status: CheckTestNotificationResponse?
        var lastAppleError = "Apple has not reported a send attempt yet"
        var workerError: String?
        while true {
            if !Self.succeeded(status) {
                let (answer, _) = client.testNotificationStatus(token: token, bundleId: bundleId, environment: environment)
                switch answer {
                case .success(let value, _):
                    status = value
                case .notFound(let failure), .retryable(let failure):
                    lastAppleError = "Get Test Notification Status: \(failure.message)"
                case .configurationError(let failure), .rejected(let failure):
                    return finish(.appleRefused, "Get Test Notification Status: \(failure.message)")
                }
            }
            if let status {
                let attempts = status.sendAttempts ?? []
                report.sendAttemptResult = attempts.last?.sendAttemptResult
                if Self.succeeded(status), let payload = status.signedPayload {
                    guard let stored = try lookup(payload) else {
                        return finish(
                            .notStored,
                            "Apple delivered the TEST notification (SUCCESS) to the URL App Store Connect holds, but "
                                + "this database has no such notification: that URL leads elsewhere (another "
                                + "deployment or database, a proxy answering 200 itself); point it at this "
                                + "deployment's receiver"
                        )
                    }
                    report.notificationId = stored.id
                    report.notificationState = stored.state
                    report.notificationReason = stored.reason
                    workerError = stored.lastError
                    switch stored.state {
                    case "applied", "duplicate":
                        return finish(
                            .passed,
                            "Apple delivered the TEST notification, the receiver stored it (notification "
                                + "\(stored.id)) and a worker applied it"
                        )
                    case "rejected", "dead":
                        return finish(
                            .notApplied,
                            "the receiver stored the TEST notification (notification \(stored.id)), and a worker "
                                + "\(stored.state == "dead" ? "gave up on" : "rejected") it: "
                                + "\(stored.reason ?? "no reason")\(stored.lastError.map { " (\($0))" } ?? "")"
                                + Self.rejectionHint(stored.reason)
                        )
                    default:
                        break
                    }
                } else if let failed = attempts.last?.sendAttemptResult {
                    return finish(
                        .notDelivered,
                        "Apple could not deliver the TEST notification to the URL App Store Connect holds for the "
                            + "\(environmentName) environment: \(failed)\(Self.sendHint(failed))"
                    )
                }
            }
            guard ContinuousClock.now < deadline else { break }
            Thread.sleep(forTimeInterval: Self.pollSeconds)
        }
        if let state = report.notificationState, let id = report.notificationId {
            return finish(
                .notApplied,
                "the receiver stored the TEST notification (notification \(id)), but no worker applied it within "
                    + "\(Self.seconds(timeoutSeconds)) (state \(state)): is `receipt-worker work` running against this "
                    + "database, with the signed-data settings (APPSTORE_ROOT_CERTIFICATES, APPSTORE_APP_APPLE_IDS)?"
                    + (workerError.map { " The worker's last error: \($0)" } ?? "")
            )
        }
        return finish(
            .notDelivered,
            "no delivery of the TEST notification was reported within \(Self.seconds(timeoutSeconds)) "
                + "(\(lastAppleError)); try a longer --timeout"
        )
    }

    private struct Refusal: Error {
        var step: Step
        var detail: String
    }

    /// Request a Test Notification, Apple's "try again" answers retried.
    private func requestToken() -> Result<String, Refusal> {
        let result = AppleCallRetry.retrying(attempts: Self.attempts) {
            client.requestTestNotification(bundleId: bundleId, environment: environment).0
        }
        switch result {
        case .success(let token, _):
            return .success(token)
        case .retryable(let failure):
            return .failure(
                Refusal(
                    step: .appleUnavailable,
                    detail: "Request a Test Notification: no answer after \(Self.attempts) attempts: \(failure.message)"
                )
            )
        case .configurationError(let failure), .rejected(let failure), .notFound(let failure):
            return .failure(
                Refusal(step: .appleRefused, detail: "Request a Test Notification: Apple refused it: \(failure.message)")
            )
        }
    }

    static func succeeded(_ status: CheckTestNotificationResponse?) -> Bool {
        status?.sendAttempts?.contains { $0.sendAttemptResult == "SUCCESS" } ?? false
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// What to look at for Apple's sendAttemptResult.
    static func sendHint(_ result: String) -> String {
        switch result {
        case "TIMED_OUT", "NO_RESPONSE", "SOCKET_ISSUE":
            return ": nothing answered at that URL; check that the receiver (or your endpoint) runs and that the proxy "
                + "and firewall let Apple reach it"
        case "TLS_ISSUE":
            return ": check the proxy's certificate (a public CA's, whole chain, the URL's host name)"
        case "CIRCULAR_REDIRECT":
            return ": the URL redirects; give Apple the final URL (Apple follows no redirect loop)"
        case "UNSUCCESSFUL_HTTP_RESPONSE_CODE":
            return ": the URL answered an error status; check the receiver's log and the proxy's path"
        case "PREMATURE_CLOSE", "INVALID_RESPONSE", "UNSUPPORTED_CHARSET":
            return ": the URL's answer was broken; check the proxy in front of the receiver"
        default:
            return ""
        }
    }

    /// What to look at for a worker's rejection of the TEST notification.
    static func rejectionHint(_ reason: String?) -> String {
        switch reason {
        case "invalid_signature":
            return "; the workers trust Apple's root (APPSTORE_ROOT_CERTIFICATES adds test roots only)"
        case "bundle_mismatch":
            return "; add the app to APPLE_BUNDLE_IDS and run receipt-worker migrate"
        case "app_mismatch":
            return "; check APPSTORE_APP_APPLE_IDS"
        case "sandbox_not_allowed":
            return "; SANDBOX_POLICY=reject refuses sandbox notifications"
        default:
            return ""
        }
    }
}
