import AppStoreModel

/// What the fake App Store does with one request.
enum FakeReply {
    /// HTTP 200 with this JSON.
    case answer(VerifyReceiptResponse)
    /// HTTP 503 with an HTML page and `Retry-After: 1`.
    case serviceUnavailable
    /// HTTP 200 whose body (and Content-Length) is the first half of this JSON, then the connection closes.
    case truncated(VerifyReceiptResponse)
    /// A TCP reset, no answer.
    case reset
    /// No answer; the connection closes after `hangSeconds`.
    case hang
    /// HTTP/2: the stream is refused (REFUSED_STREAM); HTTP/1.1: a TCP reset.
    case refused
    /// An App Store Server API answer, or one of the fake's own routes.
    case http(FakeHTTPAnswer)

    /// Whether an HTTP answer goes out (a reset, a refusal or a hang sends none).
    var isAnswer: Bool {
        switch self {
        case .answer, .serviceUnavailable, .truncated, .http: true
        case .reset, .hang, .refused: false
        }
    }
}

/// An HTTP answer made by hand: status, headers and body, possibly cut short or late.
struct FakeHTTPAnswer: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// Send the first half of the body only (Content-Length saying so), then close the connection.
    var truncated = false
    /// Added to the configured latency.
    var extraDelayMilliseconds = 0

    init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `body` as JSON with `status`.
    static func json(_ status: Int, _ body: [UInt8]) -> FakeHTTPAnswer {
        FakeHTTPAnswer(status: status, headers: [("Content-Type", "application/json")], body: body)
    }
}
