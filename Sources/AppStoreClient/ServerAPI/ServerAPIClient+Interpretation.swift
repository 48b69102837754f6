import AppStoreModel
import CurlHTTP
import Foundation

extension ServerAPIClient {
    /// What an App Store Server API error says, before the answers of the two environments are put together.
    public enum ErrorClass: String, Sendable, Hashable, CaseIterable {
        /// This environment does not know the id (4040001, 4040005, 4040010; an order lookup's status 1).
        case notFound = "not_found"
        /// Not found, "try again" (4040002, 4040004, 4040006).
        case notFoundRetryable = "not_found_retryable"
        /// This environment does not know the app (4040003): before its release, an app exists in the sandbox only.
        case appNotFound = "app_not_found"
        case retryable
        case configuration
        case rejected

        /// The answers that send a production request on to the sandbox.
        public var isNotFound: Bool {
            self == .notFound || self == .notFoundRetryable || self == .appNotFound
        }
    }

    /// One call's outcome in one environment: Apple's answer (the body, or what an operation read from it) or an
    /// error, classified.
    public enum Attempt<Value: Sendable>: Sendable {
        case value(Value)
        case failed(ErrorClass, AppStoreFailure)
    }

    /// The classification table: Apple's error code first, then the HTTP status.
    public static func classify(httpStatus: Int, errorCode: Int?) -> ErrorClass {
        switch errorCode.flatMap(ServerAPIErrorCode.init(rawValue:)) {
        case .accountNotFound?, .originalTransactionIdNotFound?, .transactionIdNotFound?:
            return .notFound
        case .accountNotFoundRetryable?, .appNotFoundRetryable?, .originalTransactionIdNotFoundRetryable?:
            return .notFoundRetryable
        case .appNotFound?:
            return .appNotFound
        case .invalidAppIdentifier?:
            return .configuration
        // A revision or pagination token Apple no longer takes: the next attempt starts again from the first page.
        case .invalidRequestRevision?, .invalidPaginationToken?, .paginationTokenExpired?:
            return .retryable
        case .rateLimitExceeded?, .generalInternal?, .generalInternalRetryable?:
            return .retryable
        case .generalBadRequest?, .invalidTransactionId?, .invalidStartDate?, .invalidEndDate?,
            .startDateAfterEndDate?, .multipleFiltersSupplied?, .invalidSort?, .invalidProductId?,
            .invalidOriginalTransactionId?,
            .invalidAppAccountTokenUUID?, .familyTransactionNotSupported?, .transactionIdNotOriginalTransactionId?:
            return .rejected
        case nil:
            break
        }
        switch httpStatus {
        case 401, 403: return .configuration
        case 400: return .rejected
        // Apple's not-found answers carry a code; a bare 404 is a URL that is not the App Store Server API.
        case 404: return errorCode == nil ? .configuration : .notFound
        case 408, 429: return .retryable
        case 400..<500: return .configuration
        default: return .retryable
        }
    }

    /// Interprets one transfer: a transport error, an error answer, or a body for the operation to read.
    public static func interpret(
        _ transfer: Result<HTTPResponse, HTTPError>, environment: AppStoreEndpoint, now: Date = Date()
    ) -> Attempt<[UInt8]> {
        switch transfer {
        case .failure(let error):
            return .failed(.retryable, AppStoreClient.interpret(error, endpoint: environment))
        case .success(let response):
            return interpret(
                httpStatus: response.status, retryAfter: response.header("Retry-After"), body: response.body,
                environment: environment, now: now
            )
        }
    }

    /// Interprets an HTTP answer. Pure: the unit tests call it with Apple's bodies and broken ones.
    public static func interpret(
        httpStatus: Int, retryAfter: String?, body: [UInt8], environment: AppStoreEndpoint, now: Date = Date()
    ) -> Attempt<[UInt8]> {
        if (200..<300).contains(httpStatus) { return .value(body) }
        let payload = try? BoundedJSON.decode(ServerAPIErrorPayload.self, from: body)
        let code = payload?.errorCode
        let errorClass = classify(httpStatus: httpStatus, errorCode: code)
        var message = "HTTP \(httpStatus)"
        if let code {
            message += ", Apple error \(code)" + (payload?.errorMessage.map { " (\(printable($0)))" } ?? "")
        } else {
            message += AppStoreClient.bodyHint(body)
        }
        let retryAfterSeconds = retryAfter.flatMap { AppStoreClient.parseRetryAfter($0, now: now) }
        if let retryAfterSeconds {
            message += ", retry after \(String(format: "%.3f", retryAfterSeconds)) s"
        }
        let cause: AppStoreFailure.Cause
        if httpStatus == 429 || code == ServerAPIErrorCode.rateLimitExceeded.rawValue {
            cause = .rateLimited
        } else if code != nil {
            cause = .appleStatus
        } else {
            cause = errorClass == .configuration ? .configuration : .httpStatus
        }
        if errorClass == .configuration {
            message += configurationHint(httpStatus: httpStatus, errorCode: code, environment: environment)
        }
        return .failed(
            errorClass,
            AppStoreFailure(
                cause: cause, message: message, endpoint: environment, appleStatus: code, httpStatus: httpStatus,
                retryAfterSeconds: retryAfterSeconds
            )
        )
    }

    /// Reads a successful body as `T`; anything else (an HTML page with status 200, half a JSON object) is retryable.
    static func decode<T: Decodable & Sendable>(
        _ type: T.Type, from body: [UInt8], environment: AppStoreEndpoint
    ) -> Attempt<T> {
        do {
            return .value(try BoundedJSON.decode(T.self, from: body))
        } catch {
            return unreadable(
                "unreadable answer (\(body.count) bytes\(AppStoreClient.bodyHint(body))): "
                    + AppStoreClient.decodingSummary(error),
                environment: environment
            )
        }
    }

    /// A retryable failure for an answer that is JSON but not what Apple sends.
    static func unreadable<T>(_ message: String, environment: AppStoreEndpoint) -> Attempt<T> {
        .failed(.retryable, AppStoreFailure(cause: .unreadableBody, message: message, endpoint: environment))
    }

    /// The result of a call whose last answer is `attempt`, from `environment`; `production` is production's
    /// not-found answer when this one came from the sandbox after it.
    public static func result<Value>(
        _ attempt: Attempt<Value>,
        from environment: AppStoreEndpoint,
        after production: (ErrorClass, AppStoreFailure)? = nil
    ) -> ServerAPIResult<Value> {
        switch attempt {
        case .value(let value):
            return .success(value, environment: environment)
        case .failed(let errorClass, var failure):
            guard let (productionClass, productionFailure) = production, errorClass.isNotFound else {
                return single(errorClass, failure)
            }
            failure.message = "production: \(productionFailure.message); sandbox: \(failure.message)"
            if errorClass == .notFoundRetryable || productionClass == .notFoundRetryable {
                return .retryable(failure)
            }
            if errorClass == .appNotFound && productionClass == .appNotFound {
                failure.message += appNotFoundHint
                return .configurationError(failure)
            }
            return .notFound(failure)
        }
    }

    private static func single<Value>(_ errorClass: ErrorClass, _ failure: AppStoreFailure) -> ServerAPIResult<Value> {
        var failure = failure
        switch errorClass {
        case .notFound: return .notFound(failure)
        case .notFoundRetryable, .retryable: return .retryable(failure)
        case .configuration: return .configurationError(failure)
        case .rejected: return .rejected(failure)
        case .appNotFound:
            failure.message += appNotFoundHint
            return .configurationError(failure)
        }
    }

    private static let appNotFoundHint = ": Apple does not know the app: check the bundle id the request was made for"

    private static func configurationHint(httpStatus: Int, errorCode: Int?, environment: AppStoreEndpoint) -> String {
        if errorCode == ServerAPIErrorCode.invalidAppIdentifier.rawValue {
            return ": check the bundle id the request was made for"
        }
        switch httpStatus {
        case 401:
            return ": Apple refused the token: check APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE "
                + "(an In-App Purchase key of the app's team), and this machine's clock"
        case 403:
            return ": Apple refused the request: check that the key in APPSTORE_PRIVATE_KEY_FILE is an In-App Purchase "
                + "key with access to the app"
        default:
            return ": check \(environment == .production ? "APPSTORE_API_URL" : "APPSTORE_SANDBOX_API_URL")"
        }
    }

    /// Apple's error message for a log line: printable ASCII, at most 120 characters.
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(120).map { (32..<127).contains($0.value) ? Character($0) : "?" })
    }

    /// The `outcome` of an `AppStoreCall`: "http_200", Apple's error code, "http_<status>", or the failure's cause.
    static func label<Value>(_ attempt: Attempt<Value>) -> String {
        switch attempt {
        case .value: "http_200"
        case .failed(_, let failure): failure.outcomeLabel
        }
    }
}
