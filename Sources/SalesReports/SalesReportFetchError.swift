/// Why a sales report could not be downloaded: the settings, Apple's refusal, or the connection. The message names
/// the setting to fix when there is one.
public struct SalesReportFetchError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// A setting that cannot work (key, issuer, vendor number, URL) or a report date that is not a date.
        case configuration
        /// 401: Apple refused the token (key id, issuer id or key wrong, or the key revoked).
        case unauthorized
        /// 403: the key may not download sales reports (its role), or the agreement is missing.
        case forbidden
        /// 400: Apple refused the request's parameters (the vendor number, the date, the report version).
        case badRequest
        /// 429: too many requests; try later.
        case rateLimited
        /// 5xx: App Store Connect is unavailable; try later.
        case unavailable
        /// An answer that is none of Apple's: HTML, an unknown status, a 200 that is not a gzip file.
        case unexpectedAnswer
        /// The report is larger than the client reads.
        case tooLarge
        /// No answer: connection, TLS, timeout.
        case transport
    }

    public var kind: Kind
    public var message: String
    /// The HTTP status when there was an answer.
    public var status: Int?

    public init(_ kind: Kind, _ message: String, status: Int? = nil) {
        self.kind = kind
        self.message = message
        self.status = status
    }

    /// Whether the same request may succeed later unchanged (rate limit, outage, connection).
    public var isRetryable: Bool {
        [.rateLimited, .unavailable, .transport].contains(kind)
    }

    public var description: String { message }
}
