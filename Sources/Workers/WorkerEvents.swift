import AppStoreClient
import Foundation
import ReceiptQueue

/// Hooks for metrics and tests. Each runs on the loop that saw the event and must be quick.
public struct WorkerEvents: Sendable {
    /// One HTTP call to Apple finished (production or sandbox).
    public var appleCall: @Sendable (AppStoreCall) -> Void
    /// A job's outcome was written; the duration is from claim to write, in seconds.
    public var jobWritten: @Sendable (JobStore.Completion, JobOutcome, Double) -> Void
    /// A scheduler pass moved jobs.
    public var swept: @Sendable (JobStore.SweepResult) -> Void
    /// An App Store Server Notification was written back: its state and, if any, the reason.
    public var notificationWritten: @Sendable (_ state: String, _ reason: String?) -> Void
    /// A retention pass ended: per kind whose retention is set, the oldest row it may delete but has not.
    public var retentionSampled: @Sendable ([RetentionBacklog]) -> Void

    public init(
        appleCall: @escaping @Sendable (AppStoreCall) -> Void = { _ in },
        jobWritten: @escaping @Sendable (JobStore.Completion, JobOutcome, Double) -> Void = { _, _, _ in },
        swept: @escaping @Sendable (JobStore.SweepResult) -> Void = { _ in },
        notificationWritten: @escaping @Sendable (_ state: String, _ reason: String?) -> Void = { _, _ in },
        retentionSampled: @escaping @Sendable ([RetentionBacklog]) -> Void = { _ in }
    ) {
        self.appleCall = appleCall
        self.jobWritten = jobWritten
        self.swept = swept
        self.notificationWritten = notificationWritten
        self.retentionSampled = retentionSampled
    }
}

// MARK: - State sampled by a metrics scrape

extension Worker {
    /// The circuit breaker in front of Apple, now: read at each scrape for a gauge.
    public var circuitBreakerState: CircuitBreaker.State { breaker.state }

    /// Jobs claimed by this process and not written yet.
    public var jobsInHand: Int { state.heldCount }
}

// MARK: - What an event means, as bounded metric labels

extension AppStoreCall {
    /// `outcome` from a bounded set of values, for a metric label: Apple's documented statuses as they are,
    /// 21100–21199 as one value, any other number as `other_status`; `http_<code>` and transport failures
    /// (`timeout`, `connection`, `unreadable_body`) as they are.
    public var metricStatus: String {
        if let status = Int(outcome) {
            if AppleStatus.descriptions[status] != nil { return outcome }
            return (21100...21199).contains(status) ? "21100-21199" : "other_status"
        }
        if outcome.hasPrefix("http_") {
            let code = outcome.dropFirst(5)
            return code.count == 3 && code.allSatisfy(\.isNumber) ? outcome : "http_other"
        }
        let causes = ["timeout", "connection", "unreadable_body", "redirect_loop", "configuration", "http_status",
                      "apple_status", "rate_limited"]
        return causes.contains(outcome) ? outcome : "other"
    }
}

extension JobOutcome {
    /// Why a `retry` outcome gave no verdict, for `retries_total{cause}`:
    /// - `no_purchases`: Apple answered, and the rules wait a little for an empty receipt to fill;
    /// - `malformed_data`: 21002, before its retries run out;
    /// - `redirect_loop`: a second 21007/21008 in one attempt;
    /// - `unreadable_body`: a body that is not Apple's JSON, or a status 0 without a receipt;
    /// - `apple_status`: Apple's "try again" statuses (21005, 21009, 21100–21199, unknown ones);
    /// - `http_status`, `timeout`, `connection`, `rate_limited`: the HTTP status or the transport failed, or the
    ///   App Store Server API asked us to slow down (the cause the App Store client gave the failure);
    /// - `revocation_check`: a signed transaction's certificates could not be checked for revocation (OCSP).
    public var retryCause: String {
        if environment != nil { return "no_purchases" }
        switch appleStatus {
        case 21002?: return "malformed_data"
        case 21007?, 21008?: return "redirect_loop"
        case 0?, 21006?: return "unreadable_body"
        case .some where failureCause == nil: return "apple_status"
        default: break
        }
        return failureCause ?? "other"
    }

    /// For a `config_error` outcome, for `configuration_errors_total{apple_status}`: Apple's status (21004: the
    /// shared secret; 21000: the request), or `http_<code>` when the URL answered an HTTP 4xx.
    public var configurationErrorLabel: String {
        if let appleStatus { return String(appleStatus) }
        if let range = error?.range(of: #"HTTP \d{3}"#, options: .regularExpression), let error {
            return "http_" + error[range].dropFirst(5)
        }
        return "other"
    }
}
