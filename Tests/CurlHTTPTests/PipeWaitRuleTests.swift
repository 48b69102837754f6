import Testing

@testable import CurlHTTP

/// A request that may share an HTTP/2 connection waits for one that may multiplex it (`CURLOPT_PIPEWAIT`) only while
/// the calls in flight fit on one connection; beyond that more connections are needed anyway, and they open side by
/// side rather than one after another (with libcurl 8, each waiting request is also tried again at every change).
@Suite struct PipeWaitRuleTests {
    @Test func theFirstConnectionsWorthOfCallsWaits() {
        let configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 19_000, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        // 19,000 calls over 64 connections: 297 streams a connection.
        #expect(configuration.maxConcurrentStreams == 297)
        #expect(configuration.waitsForMultiplexing(inFlight: 0))
        #expect(configuration.waitsForMultiplexing(inFlight: 296))
        #expect(!configuration.waitsForMultiplexing(inFlight: 297))
        #expect(!configuration.waitsForMultiplexing(inFlight: 18_999))
    }

    @Test func fewCallsAlwaysWait() {
        let configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 512, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        // libcurl's default of 100 streams a connection is the floor.
        #expect(configuration.maxConcurrentStreams == 100)
        #expect(configuration.waitsForMultiplexing(inFlight: 99))
        #expect(!configuration.waitsForMultiplexing(inFlight: 100))
    }
}
