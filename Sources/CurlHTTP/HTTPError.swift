import CCurl

/// A transfer that produced no complete HTTP response.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The connect or total timeout expired (`CURLE_OPERATION_TIMEDOUT`).
        case timeout
        /// DNS failed or nobody accepted the connection.
        case connectFailed
        /// TLS handshake or certificate verification failed.
        case tls
        /// The body exceeded `HTTPRequest.maxResponseBytes`.
        case responseTooLarge
        /// The peer reset or closed the connection (or, on HTTP/2, the request's stream) without a (complete) reply.
        case connectionReset
        /// The peer broke the HTTP protocol: HTTP/2 framing errors, as when HTTP/2 is spoken to a server that speaks
        /// only HTTP/1.1.
        case protocolError
        /// The transport shut down, or the caller's task was cancelled, before the transfer finished.
        case cancelled
        case other
    }

    public var kind: Kind
    /// The libcurl `CURLcode`, or 0 when libcurl did not report one (e.g. `.cancelled`).
    public var curlCode: Int32
    /// `curl_easy_strerror` text, followed by libcurl's `CURLOPT_ERRORBUFFER` detail when there is one.
    public var message: String

    public init(kind: Kind, curlCode: Int32 = 0, message: String) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
    }

    /// What happened, in words (for logs and messages), then libcurl's code and message.
    public var description: String {
        let what = switch kind {
        case .timeout: "HTTP request timed out"
        case .connectFailed: "HTTP connection failed"
        case .tls: "TLS handshake or certificate check failed"
        case .responseTooLarge: "HTTP answer too large"
        case .connectionReset: "HTTP connection reset or closed without a complete answer"
        case .protocolError: "HTTP protocol error"
        case .cancelled: "HTTP request cancelled"
        case .other: "HTTP request failed"
        }
        return "\(what) (curl \(curlCode)): \(message)"
    }
}

extension HTTPError {
    /// Classifies a libcurl result; `writeAborted` says our write callback refused the body for its size.
    static func kind(forCurlCode code: Int32, writeAborted: Bool) -> Kind {
        switch code {
        case 28: .timeout
        case 6, 7: .connectFailed
        case 35, 51, 58, 60, 77, 83, 90, 91: .tls
        case 63: .responseTooLarge  // CURLE_FILESIZE_EXCEEDED: Content-Length over CURLOPT_MAXFILESIZE_LARGE.
        case 23 where writeAborted: .responseTooLarge
        case 52, 56, 92: .connectionReset  // 92: CURLE_HTTP2_STREAM, the server reset the request's stream.
        case 16: .protocolError  // CURLE_HTTP2: the HTTP/2 framing layer failed.
        default: .other
        }
    }

    /// Builds the error for a failed transfer from its `CURLcode` and the handle's error buffer.
    init(curlCode code: CURLcode, detail: String, writeAborted: Bool) {
        let raw = Int32(truncatingIfNeeded: code.rawValue)
        let summary = String(cString: curl_easy_strerror(code))
        self.init(
            kind: Self.kind(forCurlCode: raw, writeAborted: writeAborted),
            curlCode: raw,
            message: detail.isEmpty || detail == summary ? summary : "\(summary): \(detail)"
        )
    }

    static func cancelled(_ why: String) -> HTTPError {
        HTTPError(kind: .cancelled, message: why)
    }
}
