import AppStoreModel

/// What the fake App Store does with one verifyReceipt request.
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
}
