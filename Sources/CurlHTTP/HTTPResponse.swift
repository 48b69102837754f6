/// A complete HTTP response, whatever its status: a 503 or 429 is a response, not an `HTTPError`.
public struct HTTPResponse: Sendable {
    /// The HTTP status code (`CURLINFO_RESPONSE_CODE`).
    public var status: Int
    /// The response body.
    public var body: [UInt8]
    /// Headers of the final response only (interim `1xx` responses are dropped), names as the server sent them.
    public var headers: [(name: String, value: String)]
    /// Seconds the whole transfer took (`CURLINFO_TOTAL_TIME`).
    public var totalSeconds: Double
    /// The HTTP version the response came in (`CURLINFO_HTTP_VERSION`).
    public var httpVersion: HTTPVersion

    public init(
        status: Int, body: [UInt8], headers: [(name: String, value: String)] = [], totalSeconds: Double = 0,
        httpVersion: HTTPVersion = .unknown
    ) {
        self.status = status
        self.body = body
        self.headers = headers
        self.totalSeconds = totalSeconds
        self.httpVersion = httpVersion
    }

    /// The value of the first header called `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// An HTTP version as libcurl reports it for a response.
public enum HTTPVersion: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    case http1_0 = "HTTP/1.0"
    case http1_1 = "HTTP/1.1"
    case http2 = "HTTP/2"
    case http3 = "HTTP/3"
    case unknown

    /// From `CURLINFO_HTTP_VERSION`'s `CURL_HTTP_VERSION_*` value.
    init(curlVersion: Int) {
        self = switch curlVersion {
        case 1: .http1_0
        case 2: .http1_1
        case 3: .http2
        case 30: .http3
        default: .unknown
        }
    }

    public var description: String { rawValue }
}
