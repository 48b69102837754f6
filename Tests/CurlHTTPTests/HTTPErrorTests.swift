import Testing
@testable import CurlHTTP

@Suite struct HTTPErrorTests {
    @Test(arguments: [
        28: HTTPError.Kind.timeout, 7: .connectFailed, 6: .connectFailed, 35: .tls, 51: .tls, 60: .tls, 77: .tls,
        52: .connectionReset, 56: .connectionReset, 92: .connectionReset, 16: .protocolError, 63: .responseTooLarge, 23: .other, 18: .other, 1: .other,
    ] as [Int32: HTTPError.Kind])
    func classifiesCurlCodes(code: Int32, kind: HTTPError.Kind) {
        #expect(HTTPError.kind(forCurlCode: code, writeAborted: false) == kind)
    }

    @Test func writeErrorIsTooLargeOnlyWhenTheBodyLimitAbortedIt() {
        #expect(HTTPError.kind(forCurlCode: 23, writeAborted: true) == .responseTooLarge)
        #expect(HTTPError.kind(forCurlCode: 23, writeAborted: false) == .other)
    }

    @Test func headerLookupIgnoresCase() {
        let response = HTTPResponse(status: 503, body: [], headers: [(name: "Retry-After", value: "30")])
        #expect(response.header("retry-after") == "30")
        #expect(response.header("RETRY-AFTER") == "30")
        #expect(response.header("Content-Type") == nil)
    }

    @Test("the description says what happened in words, not in Swift names", arguments: [
        (HTTPError.Kind.timeout, "HTTP request timed out (curl 28): "),
        (.connectFailed, "HTTP connection failed (curl 28): "),
        (.tls, "TLS handshake or certificate check failed (curl 28): "),
    ])
    func descriptionInWords(kind: HTTPError.Kind, prefix: String) {
        let text = HTTPError(kind: kind, curlCode: 28, message: "detail").description
        #expect(text == prefix + "detail")
        #expect(!text.contains("HTTPError"))
    }
}
