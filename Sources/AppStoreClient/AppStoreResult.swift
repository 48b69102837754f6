import ReceiptRules

/// What one verification attempt (at most two calls: production, then sandbox or production once) came to.
public enum AppStoreResult: Sendable {
    /// Apple accepted the receipt; these are its contents, with the environment of the endpoint that answered.
    case receipt(ReceiptContents, status: Int)
    /// Apple refused to vouch for the receipt (21003, 21010).
    case invalidReceipt(status: Int)
    /// 21002: malformed data or a temporary issue at Apple; the caller decides when to give up.
    case malformedData(status: Int)
    /// Our configuration is wrong (21000, 21004, an HTTP 4xx other than 408/429). Costs no attempt.
    case configurationError(AppStoreFailure)
    /// No verdict: timeout, connection error, HTTP 5xx/429, an unreadable body, 21005, 21009, 21100–21199, a
    /// second redirect, an unknown status.
    case retryable(AppStoreFailure)
}

/// Why an attempt gave no verdict, for last_error, logs and metrics. Never contains the receipt or the secret.
public struct AppStoreFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Cause: String, Sendable, Hashable {
        case timeout, connection, httpStatus = "http_status", unreadableBody = "unreadable_body"
        case appleStatus = "apple_status", redirectLoop = "redirect_loop", configuration
        /// An App Store Server API 429, or a request the client's pacing would have held past its bound.
        case rateLimited = "rate_limited"
        /// A request refused before it was sent (an App Store Server API id that cannot be Apple's).
        case invalidRequest = "invalid_request"
    }

    public var cause: Cause
    public var message: String
    /// Apple's status when it answered one: verifyReceipt's `status`, or the App Store Server API's `errorCode`.
    public var appleStatus: Int?
    /// The HTTP status when Apple's server answered one.
    public var httpStatus: Int?
    /// Seconds from a Retry-After header, when the server sent one.
    public var retryAfterSeconds: Double?
    /// Which endpoint the failing call went to.
    public var endpoint: AppStoreEndpoint

    public init(
        cause: Cause,
        message: String,
        endpoint: AppStoreEndpoint,
        appleStatus: Int? = nil,
        httpStatus: Int? = nil,
        retryAfterSeconds: Double? = nil
    ) {
        self.cause = cause
        self.message = message
        self.endpoint = endpoint
        self.appleStatus = appleStatus
        self.httpStatus = httpStatus
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "\(endpoint.rawValue): \(message)" }

    /// How the call that failed is recorded in `AppStoreCall.outcome`: Apple's status (or error code), else
    /// `http_<status>`, else the cause.
    public var outcomeLabel: String {
        appleStatus.map(String.init) ?? httpStatus.map { "http_\($0)" } ?? cause.rawValue
    }
}

public enum AppStoreEndpoint: String, Sendable, Hashable {
    case production, sandbox

    public var environment: PurchaseEnvironment { self == .production ? .production : .sandbox }
}
