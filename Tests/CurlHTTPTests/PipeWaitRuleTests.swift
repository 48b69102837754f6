import CCurl
import Testing

@testable import CurlHTTP

/// With libcurl 8, a request that may share an HTTP/2 connection waits for one that may multiplex it
/// (`CURLOPT_PIPEWAIT`) only while the calls in flight fit on one connection: beyond that more connections are needed
/// anyway, and libcurl 8 would park each waiting request and try all of them again at every change. With 7.88 every
/// request waits.
@Suite struct PipeWaitRuleTests {
    @Test func theFirstConnectionsWorthOfCallsWaits() {
        let configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 19_000, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        // 19,000 calls over 64 connections: 297 streams a connection.
        #expect(configuration.maxConcurrentStreams == 297)
        #expect(configuration.waitsForMultiplexing(inFlight: 0, parkedRequestsRetried: true))
        #expect(configuration.waitsForMultiplexing(inFlight: 296, parkedRequestsRetried: true))
        #expect(!configuration.waitsForMultiplexing(inFlight: 297, parkedRequestsRetried: true))
        #expect(!configuration.waitsForMultiplexing(inFlight: 18_999, parkedRequestsRetried: true))
    }

    @Test func fewCallsAlwaysWait() {
        let configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 512, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        // libcurl's default of 100 streams a connection is the floor.
        #expect(configuration.maxConcurrentStreams == 100)
        #expect(configuration.waitsForMultiplexing(inFlight: 99, parkedRequestsRetried: true))
        #expect(!configuration.waitsForMultiplexing(inFlight: 100, parkedRequestsRetried: true))
    }

    @Test func withLibcurl7EveryRequestWaits() {
        let configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 19_000, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        #expect(configuration.waitsForMultiplexing(inFlight: 0, parkedRequestsRetried: false))
        #expect(configuration.waitsForMultiplexing(inFlight: 18_999, parkedRequestsRetried: false))
    }

    @Test func theRuleFollowsTheLinkedLibcurl() {
        let major = Int(String(cString: curl_version_info(CURLVERSION_FIRST).pointee.version).split(separator: ".")[0])
        #expect(CurlMultiTransport.retriesEveryParkedRequest == ((major ?? 0) >= 8))
    }
}
