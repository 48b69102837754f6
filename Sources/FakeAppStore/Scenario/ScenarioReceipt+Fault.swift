extension ScenarioReceipt {
    /// A misbehaviour of Apple's verifyReceipt, injected by a scenario receipt or at random (`FaultRates`).
    /// The raw values are the names used in scenario JSON and in the statistics.
    public enum Fault: String, Codable, Sendable, CaseIterable {
        /// Status 21005: the receipt server is unavailable.
        case status21005 = "21005"
        /// Status 21009: internal data access error.
        case status21009 = "21009"
        /// Status 21199 with `"is_retryable": true`.
        case status21199 = "21199"
        /// Status 21004: the shared secret does not match.
        case status21004 = "21004"
        /// Status 21002: the receipt data was malformed.
        case status21002 = "21002"
        /// Status 21100 with `"is_retryable": true`.
        case status21100 = "21100"
        /// HTTP 503 with an HTML page and `Retry-After: 1`.
        case http503
        /// The same answer as `http503`, named after what a JSON parser trips on.
        case html503
        /// HTTP 200 whose body is the first half of the normal JSON answer (a complete HTTP message, broken JSON),
        /// then the connection closes.
        case truncated
        /// The connection is reset (TCP RST) without an answer.
        case reset
        /// No answer for `hangSeconds`, then the connection closes.
        case hang
        /// Over HTTP/2 the request's stream is refused (RST_STREAM with REFUSED_STREAM: not processed, so a client
        /// may send it again, on another connection); over HTTP/1.1 the connection is reset, as with `reset`.
        case refused

        /// The verifyReceipt status this fault answers with, if it is a status fault.
        public var status: Int? {
            switch self {
            case .status21005: 21005
            case .status21009: 21009
            case .status21199: 21199
            case .status21004: 21004
            case .status21002: 21002
            case .status21100: 21100
            case .http503, .html503, .truncated, .reset, .hang, .refused: nil
            }
        }
    }
}
