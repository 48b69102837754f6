import CurlHTTP
import Synchronization

/// Sends signed notifications to an app's server as the App Store does: `POST` with the JSON body
/// `{"signedPayload": "…"}`. An answer of 200…206 is a success (Apple's rule); any other answer, no connection or a
/// timeout is a failed attempt, named with Apple's sendAttemptResult. One libcurl transport, made at the first send
/// and shut down with the server.
final class NotificationSender: Sendable {
    private enum State {
        case idle
        case running(CurlMultiTransport)
        case stopped
    }

    private let state = Mutex(State.idle)
    /// Connect and total timeout of one attempt.
    let timeoutMilliseconds: Int

    init(timeoutMilliseconds: Int = 10_000) {
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Posts `signedPayload` to `url`; `completion` gets the attempt's sendAttemptResult, once, on the transport's
    /// thread (or at once, with OTHER, when the transport cannot be had).
    func send(_ signedPayload: String, to url: String, completion: @escaping @Sendable (String) -> Void) {
        guard let transport = transport(),
            let body = try? FakePayloads.json(["signedPayload": signedPayload])
        else {
            completion("OTHER")
            return
        }
        let request = HTTPRequest(
            url: url, method: .post, body: body, headers: ["Content-Type: application/json"],
            connectTimeoutMilliseconds: timeoutMilliseconds, totalTimeoutMilliseconds: timeoutMilliseconds,
            maxResponseBytes: 1 << 20
        )
        transport.send(request) { completion(Self.result($0)) }
    }

    /// Fails sends under way and refuses later ones. Idempotent.
    func shutdown() {
        let running = state.withLock { state -> CurlMultiTransport? in
            defer { state = .stopped }
            if case .running(let transport) = state { return transport }
            return nil
        }
        running?.shutdown()
    }

    /// Apple's sendAttemptResult for what the attempt got.
    static func result(_ outcome: Result<HTTPResponse, HTTPError>) -> String {
        switch outcome {
        case .success(let response):
            (200...206).contains(response.status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        case .failure(let error):
            switch error.kind {
            case .timeout: "TIMED_OUT"
            case .connectFailed: "NO_RESPONSE"
            case .tls: "TLS_ISSUE"
            case .connectionReset: "PREMATURE_CLOSE"
            case .responseTooLarge, .protocolError: "INVALID_RESPONSE"
            case .cancelled, .other: "OTHER"
            }
        }
    }

    private func transport() -> CurlMultiTransport? {
        state.withLock { state in
            switch state {
            case .running(let transport):
                return transport
            case .stopped:
                return nil
            case .idle:
                let configuration = CurlMultiTransport.Configuration(
                    maxTotalConnections: 16, userAgent: "receipt-worker fake App Store"
                )
                guard let transport = try? CurlMultiTransport(configuration: configuration) else { return nil }
                state = .running(transport)
                return transport
            }
        }
    }
}
