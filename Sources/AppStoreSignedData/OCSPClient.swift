import X509

/// Sends OCSP requests for the verifier's online checks. The transport is the caller's (the workers use libcurl):
/// `send` posts the DER request to the responder's URI and returns the DER response, or throws.
public struct OCSPClient: OCSPRequester, Sendable {
    public let send: @Sendable (_ request: [UInt8], _ uri: String) async throws -> [UInt8]

    public init(send: @escaping @Sendable (_ request: [UInt8], _ uri: String) async throws -> [UInt8]) {
        self.send = send
    }

    /// A responder that cannot be reached is a terminal error for swift-certificates' policy, which
    /// `AppStoreOCSPPolicy` then reports as no verdict (retryable), never as a rejection.
    public func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        do {
            return .response(try await send(request, uri))
        } catch {
            return .terminalError(Unreachable(uri: uri, underlying: "\(error)"))
        }
    }

    struct Unreachable: Error, CustomStringConvertible {
        var uri: String
        var underlying: String
        var description: String { "OCSP responder unreachable: \(uri): \(underlying)" }
    }
}
