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
    }

    public var cause: Cause
    public var message: String
    /// Apple's status when it answered one.
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
}

public enum AppStoreEndpoint: String, Sendable, Hashable {
    case production, sandbox

    public var environment: PurchaseEnvironment { self == .production ? .production : .sandbox }
}
