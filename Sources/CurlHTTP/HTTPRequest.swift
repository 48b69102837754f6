/// One HTTP request to send through a `CurlMultiTransport`.
public struct HTTPRequest: Sendable {
    /// Absolute `http://` or `https://` URL; other schemes are refused by libcurl.
    public var url: String
    /// `POST` (the default: verifyReceipt) or `GET` (the App Store Server API's lookups).
    public var method: HTTPMethod
    /// The POST body, sent as is (binary-safe). A `GET` sends no body, whatever this holds.
    public var body: HTTPBody
    /// Extra request headers, each `"Name: value"`. `Expect:` is always added to disable `100-continue`.
    public var headers: [String]
    /// Limit for DNS + TCP + TLS setup (`CURLOPT_CONNECTTIMEOUT_MS`). There is no "no timeout": values below 1
    /// count as 1 ms.
    public var connectTimeoutMilliseconds: Int
    /// Limit for the whole transfer, connect included (`CURLOPT_TIMEOUT_MS`); values below 1 count as 1 ms.
    public var totalTimeoutMilliseconds: Int
    /// A response body longer than this fails the request with `.responseTooLarge` (a declared `Content-Length`
    /// over it fails before the body is read).
    public var maxResponseBytes: Int

    public init(
        url: String,
        method: HTTPMethod = .post,
        body: HTTPBody,
        headers: [String] = [],
        connectTimeoutMilliseconds: Int = 5_000,
        totalTimeoutMilliseconds: Int = 30_000,
        maxResponseBytes: Int = 8 << 20
    ) {
        self.url = url
        self.method = method
        self.body = body
        self.headers = headers
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.totalTimeoutMilliseconds = totalTimeoutMilliseconds
        self.maxResponseBytes = maxResponseBytes
    }

    /// A request whose body is a copy of `body`.
    public init(
        url: String,
        method: HTTPMethod = .post,
        body: [UInt8] = [],
        headers: [String] = [],
        connectTimeoutMilliseconds: Int = 5_000,
        totalTimeoutMilliseconds: Int = 30_000,
        maxResponseBytes: Int = 8 << 20
    ) {
        self.init(
            url: url, method: method, body: HTTPBody(body), headers: headers,
            connectTimeoutMilliseconds: connectTimeoutMilliseconds, totalTimeoutMilliseconds: totalTimeoutMilliseconds,
            maxResponseBytes: maxResponseBytes
        )
    }
}

/// The request methods the transport sends.
public enum HTTPMethod: String, Sendable, Hashable {
    case get = "GET"
    case post = "POST"
    /// A body sent as POST's is, under the method PUT (Send Consumption Information).
    case put = "PUT"
}
