import X509

/// Sends OCSP requests for the verifier's online checks. The transport is the caller's (the workers use libcurl):
/// `send` posts the DER request to the responder's URI and returns the DER response, or throws.
public struct OCSPClient: OCSPRequester, Sendable {
    /// Marks a failure to reach the responder in the verifier's failure reasons (retryable, unlike a revocation).
    static let unreachableMarker = "OCSP responder unreachable"

    public let send: @Sendable (_ request: [UInt8], _ uri: String) async throws -> [UInt8]

    public init(send: @escaping @Sendable (_ request: [UInt8], _ uri: String) async throws -> [UInt8]) {
        self.send = send
    }

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
        var description: String { "\(OCSPClient.unreachableMarker): \(uri): \(underlying)" }
    }
}
