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

    public init(status: Int, body: [UInt8], headers: [(name: String, value: String)] = [], totalSeconds: Double = 0) {
        self.status = status
        self.body = body
        self.headers = headers
        self.totalSeconds = totalSeconds
    }

    /// The value of the first header called `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}
