import Testing
@testable import CurlHTTP

/// The transport verifies the peer's certificate chain and its host name, and follows no redirect
/// (docs/architecture.md, rule 1). Checked against a real TLS server whose certificate is made at test time: the
/// transport has no setting to trust another CA, so what is tested is that it refuses; that the same server completes
/// a handshake with a client that does not stop at verification shows the refusal is the verification's.
@Suite("TLS and redirects: certificates and host names verified, no redirect followed", .serialized)
struct TLSTests {
    @Test("a self-signed certificate for the right address is refused")
    func selfSigned() async throws {
        let server = try TLSServer(commonName: "127.0.0.1", subjectAltName: "IP:127.0.0.1")
        defer { server.stop() }
        let report = try server.clientReport(verifyingHost: "127.0.0.1")
        #expect(report.contains("BEGIN CERTIFICATE"), "the server does not complete a handshake: \(report)")
        #expect(report.contains("self-signed certificate"), "\(report)")

        let (_, transport) = try CurlMultiTransportTests.start()
        defer { transport.shutdown() }
        let result = await transport.send(HTTPRequest(url: server.url("/verifyReceipt"), body: [1]))
        let error = try #require(result.failure, "a self-signed certificate was accepted")
        #expect(error.kind == .tls, "\(error)")
        #expect(error.curlCode == 60, "\(error)")  // CURLE_PEER_FAILED_VERIFICATION
        #expect(error.message.contains("self-signed certificate"), "\(error)")
    }

    @Test("a certificate for another host name is refused")
    func wrongHostName() async throws {
        let server = try TLSServer(commonName: "wrong.example", subjectAltName: "DNS:wrong.example")
        defer { server.stop() }
        let report = try server.clientReport(verifyingHost: "127.0.0.1")
        #expect(report.contains("BEGIN CERTIFICATE"), "the server does not complete a handshake: \(report)")

        let (_, transport) = try CurlMultiTransportTests.start()
        defer { transport.shutdown() }
        for host in ["127.0.0.1", "localhost"] {
            let result = await transport.send(HTTPRequest(url: server.url("/verifyReceipt", host: host), body: [1]))
            let error = try #require(result.failure, "a certificate for wrong.example was accepted for \(host)")
            #expect(error.kind == .tls, "\(host): \(error)")
            #expect(error.curlCode == 60, "\(host): \(error)")
        }
    }

    @Test("a redirect is answered as it is, not followed")
    func redirectNotFollowed() async throws {
        let (server, transport) = try CurlMultiTransportTests.start()
        defer { CurlMultiTransportTests.stop(server, transport) }
        let response = try await transport.send(HTTPRequest(url: server.url("/redirect"), body: [1, 2])).get()
        #expect(response.status == 302)
        #expect(response.header("location") == "/echo")
        #expect(server.requestsReceived == 1, "the redirect was followed")
        #expect(server.requests(to: "/echo") == 0, "the redirect was followed")
    }
}
