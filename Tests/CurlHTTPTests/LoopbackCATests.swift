import CCurl
import Testing
@testable import CurlHTTP

/// The loopback CA file: trusted for `https://` to loopback hosts only, and there it turns a self-signed certificate
/// that would be refused into a verified one, while the host name is still checked.
@Suite("Loopback CA file: trusted for loopback https only, host names still verified", .serialized)
struct LoopbackCATests {
    @Test("the CA file applies to https on loopback hosts, never to other hosts or plain http")
    func appliesToLoopbackHTTPSOnly() {
        let configuration = CurlMultiTransport.Configuration(loopbackCAFile: "/tmp/ca.pem")
        #expect(Route(url: "https://127.0.0.1:8443/verifyReceipt", configuration: configuration).caFile == "/tmp/ca.pem")
        #expect(Route(url: "https://localhost/verifyReceipt", configuration: configuration).caFile == "/tmp/ca.pem")
        #expect(Route(url: "https://buy.itunes.apple.com/verifyReceipt", configuration: configuration).caFile == nil)
        #expect(Route(url: "https://127.0.0.1.example.com/", configuration: configuration).caFile == nil)
        #expect(Route(url: "http://127.0.0.1/verifyReceipt", configuration: configuration).caFile == nil)
    }

    @Test("HTTP/2 over TLS for https, HTTP/1.1 when forced or for plain http to other hosts")
    func httpVersionByURL() {
        let http2 = CurlMultiTransport.Configuration(httpVersion: .http2WithLoopbackCleartext)
        #expect(Route(url: "https://buy.itunes.apple.com/", configuration: http2).curlHTTPVersion == CURL_HTTP_VERSION_2TLS)
        #expect(Route(url: "https://buy.itunes.apple.com/", configuration: http2).mayMultiplex)
        #expect(Route(url: "http://ocsp.apple.com/", configuration: http2).curlHTTPVersion == CURL_HTTP_VERSION_1_1)
        let loopback = Route(url: "http://127.0.0.1:8090/", configuration: http2)
        #expect(loopback.mayMultiplex == CurlMultiTransport.supportsCleartextHTTP2)
        let http1 = CurlMultiTransport.Configuration(httpVersion: .http1_1)
        #expect(Route(url: "https://buy.itunes.apple.com/", configuration: http1).curlHTTPVersion == CURL_HTTP_VERSION_1_1)
        #expect(!Route(url: "https://buy.itunes.apple.com/", configuration: http1).mayMultiplex)
    }

    @Test("a self-signed certificate whose file is the loopback CA file is verified, and the answer arrives")
    func trustedSelfSigned() async throws {
        let server = try TLSServer(commonName: "127.0.0.1", subjectAltName: "IP:127.0.0.1")
        defer { server.stop() }
        let transport = try CurlMultiTransport(configuration: .init(loopbackCAFile: server.certificatePath))
        defer { transport.shutdown() }
        // `openssl s_server -www` answers GET with a status page.
        let response = try await transport.send(HTTPRequest(url: server.url("/"), method: .get)).get()
        #expect(response.status == 200)
        // s_server offers no h2 through ALPN, and answers in HTTP/1.0.
        #expect(response.httpVersion == .http1_0)
        #expect(String(decoding: response.body, as: UTF8.self).contains("s_server"))
    }

    @Test("with the CA trusted, a certificate for another host name is still refused")
    func trustedButWrongHost() async throws {
        let server = try TLSServer(commonName: "wrong.example", subjectAltName: "DNS:wrong.example")
        defer { server.stop() }
        let transport = try CurlMultiTransport(configuration: .init(loopbackCAFile: server.certificatePath))
        defer { transport.shutdown() }
        let result = await transport.send(HTTPRequest(url: server.url("/"), method: .get))
        let error = try #require(result.failure, "a certificate for wrong.example was accepted for 127.0.0.1")
        #expect(error.kind == .tls, "\(error)")
        #expect(error.curlCode == 60, "\(error)")
        #expect(!error.message.contains("self-signed"), "the chain, not the name, was refused: \(error)")
    }
}
