import AppStoreModel
import CurlHTTP
import Foundation
import ReceiptRules

extension AppStoreClient {
    /// What to do after one call.
    public enum Step: Sendable {
        case done(AppStoreResult)
        case redirect(AppStoreEndpoint, status: Int)

        var label: String {
            switch self {
            case .redirect(_, let status): String(status)
            case .done(.receipt(_, let status)), .done(.invalidReceipt(let status)), .done(.malformedData(let status)):
                String(status)
            case .done(.configurationError(let failure)), .done(.retryable(let failure)):
                failure.outcomeLabel
            }
        }
    }

    /// Interprets one transfer: a transport error, an HTTP status, or Apple's JSON.
    public static func interpret(_ transfer: Result<HTTPResponse, HTTPError>, endpoint: AppStoreEndpoint) -> Step {
        switch transfer {
        case .failure(let error):
            return .done(.retryable(interpret(error, endpoint: endpoint)))
        case .success(let response):
            return interpret(
                httpStatus: response.status,
                retryAfter: response.header("Retry-After"),
                body: response.body,
                endpoint: endpoint
            )
        }
    }

    static func interpret(_ error: HTTPError, endpoint: AppStoreEndpoint) -> AppStoreFailure {
        let cause: AppStoreFailure.Cause = error.kind == .timeout ? .timeout : .connection
        return AppStoreFailure(cause: cause, message: "\(error)", endpoint: endpoint)
    }

    /// Interprets an HTTP answer. Pure: the unit tests call it with Apple's real bodies and broken ones.
    public static func interpret(httpStatus: Int, retryAfter: String?, body: [UInt8], endpoint: AppStoreEndpoint) -> Step {
        guard httpStatus == 200 else {
            var failure = AppStoreFailure(
                cause: .httpStatus,
                message: "HTTP \(httpStatus)\(bodyHint(body))",
                endpoint: endpoint,
                httpStatus: httpStatus,
                retryAfterSeconds: retryAfter.flatMap { parseRetryAfter($0) }
            )
            if (400..<500).contains(httpStatus), httpStatus != 408, httpStatus != 429 {
                failure.cause = .configuration
                failure.message += ": check APPLE_\(endpoint == .production ? "PRODUCTION" : "SANDBOX")_URL"
                return .done(.configurationError(failure))
            }
            return .done(.retryable(failure))
        }
        let response: VerifyReceiptResponse
        do {
            response = try VerifyReceiptResponse.decode(body)
        } catch {
            return .done(.retryable(AppStoreFailure(
                cause: .unreadableBody,
                message: "unreadable answer (\(body.count) bytes\(bodyHint(body))): \(decodingSummary(error))",
                endpoint: endpoint
            )))
        }
        let status = response.status
        switch AppleStatus.classify(status) {
        case .valid:
            guard response.receipt != nil else {
                return .done(.retryable(AppStoreFailure(
                    cause: .unreadableBody, message: "status \(status) without a receipt", endpoint: endpoint,
                    appleStatus: status
                )))
            }
            return .done(.receipt(response.contents(environment: endpoint.environment), status: status))
        case .useSandbox:
            return .redirect(.sandbox, status: status)
        case .useProduction:
            return .redirect(.production, status: status)
        case .invalidReceipt:
            return .done(.invalidReceipt(status: status))
        case .malformedData:
            return .done(.malformedData(status: status))
        case .configurationError:
            return .done(.configurationError(AppStoreFailure(
                cause: .configuration,
                message: "Apple answered \(AppleStatus.describe(status))"
                    + (status == 21004 ? ": check APPLE_SHARED_SECRET" : ": check the request this service sends"),
                endpoint: endpoint,
                appleStatus: status
            )))
        case .retryable:
            let hint = response.isRetryable == true ? ", is_retryable" : ""
            return .done(.retryable(AppStoreFailure(
                cause: .appleStatus,
                message: "Apple answered \(AppleStatus.describe(status))\(hint)",
                endpoint: endpoint,
                appleStatus: status
            )))
        }
    }

    /// Retry-After as seconds from `now`: a number of seconds; a number past 10^11 as milliseconds since 1970 (the App
    /// Store Server API's spelling; 10^11 seconds would be 3,000 years); or an HTTP date. At most a day
    /// (`maxRetryAfterSeconds`): the answer is the server's to choose, and a pause of 10^300 seconds would overflow
    /// every clock it is added to.
    static func parseRetryAfter(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let number = Double(trimmed), number >= 0, number.isFinite {
            let seconds = number >= 1e11 ? max(0, number / 1000 - now.timeIntervalSince1970) : number
            return min(seconds, maxRetryAfterSeconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return min(max(0, date.timeIntervalSince(now)), maxRetryAfterSeconds)
    }

    /// The longest Retry-After honoured: a day.
    static let maxRetryAfterSeconds: Double = 86_400

    /// The start of a body that is not JSON (an HTML error page), for last_error. Printable ASCII only.
    static func bodyHint(_ body: [UInt8]) -> String {
        guard let first = body.first(where: { $0 > 32 }), first != UInt8(ascii: "{") else { return "" }
        let text = body.prefix(60).map { (32..<127).contains($0) ? Character(UnicodeScalar($0)) : " " }
        return ", body starts \"\(String(text).trimmingCharacters(in: .whitespaces))\""
    }

    static func decodingSummary(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty: return "not JSON"
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "\(path.isEmpty ? "" : path + ": ")\(context.debugDescription)"
        @unknown default: return "undecodable"
        }
    }
}
