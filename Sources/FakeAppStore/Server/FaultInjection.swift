import AppStoreModel

/// Turns an injected fault into the reply Apple (or a load balancer in front of it) would give.
enum FaultInjection {
    /// - Parameter normal: the answer the request would get without the fault (truncated replies cut it in half).
    static func reply(for fault: ScenarioReceipt.Fault, normal: () -> VerifyReceiptResponse) -> FakeReply {
        switch fault {
        case .status21005, .status21009, .status21004, .status21002, .status21100, .status21199:
            let status = fault.status ?? 21005
            return .answer(VerifyReceiptResponse(status: status, isRetryable: isRetryable(status) ? true : nil))
        case .http503, .html503:
            return .serviceUnavailable
        case .truncated:
            return .truncated(normal())
        case .reset:
            return .reset
        case .hang:
            return .hang
        case .refused:
            return .refused
        }
    }

    /// Apple marks its 21100–21199 internal errors with `"is_retryable": true`.
    static func isRetryable(_ status: Int) -> Bool {
        (21100...21199).contains(status)
    }

    /// The page a 503 from Apple's edge carries: HTML, not JSON.
    static let serviceUnavailablePage = """
        <!DOCTYPE html>
        <html><head><title>503 Service Unavailable</title></head>
        <body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p></body>
        </html>

        """
}
