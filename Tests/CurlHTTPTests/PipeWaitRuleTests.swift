import CCurl
import Testing

@testable import CurlHTTP

/// Under `waitsOnlyWhileOneConnectionFits` (the default with libcurl 8), a request that may share an HTTP/2
/// connection waits for one that may multiplex it (`CURLOPT_PIPEWAIT`) only while the calls in flight to its host fit
/// on one connection: beyond that more connections are needed anyway, and libcurl 8 would park each waiting request
/// and try all of them again at every change. Otherwise (libcurl 7.88) every request waits.
@Suite struct PipeWaitRuleTests {
    private static func sized(_ calls: Int, limited: Bool) -> CurlMultiTransport.Configuration {
        var configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: calls, to: ["https://buy.itunes.apple.com/verifyReceipt"], httpVersion: .http2OverTLS
        )
        configuration.waitsOnlyWhileOneConnectionFits = limited
        return configuration
    }

    @Test func theFirstConnectionsWorthOfCallsWaits() {
        let configuration = Self.sized(19_000, limited: true)
        // 19,000 calls over 64 connections: 297 streams a connection.
        #expect(configuration.maxConcurrentStreams == 297)
        #expect(configuration.waitsForMultiplexing(inFlight: 0))
        #expect(configuration.waitsForMultiplexing(inFlight: 296))
        #expect(!configuration.waitsForMultiplexing(inFlight: 297))
        #expect(!configuration.waitsForMultiplexing(inFlight: 18_999))
    }

    @Test func aHundredStreamsAtLeast() {
        let configuration = Self.sized(512, limited: true)
        // libcurl's default of 100 streams a connection is the floor.
        #expect(configuration.maxConcurrentStreams == 100)
        #expect(configuration.waitsForMultiplexing(inFlight: 99))
        #expect(!configuration.waitsForMultiplexing(inFlight: 100))
    }

    @Test func otherwiseEveryRequestWaits() {
        let configuration = Self.sized(19_000, limited: false)
        #expect(configuration.waitsForMultiplexing(inFlight: 0))
        #expect(configuration.waitsForMultiplexing(inFlight: 18_999))
    }

    @Test func theDefaultFollowsTheLinkedLibcurl() {
        let major = Int(String(cString: curl_version_info(CURLVERSION_FIRST).pointee.version).split(separator: ".")[0])
        #expect(CurlMultiTransport.retriesEveryParkedRequest == ((major ?? 0) >= 8))
        #expect(CurlMultiTransport.Configuration().waitsOnlyWhileOneConnectionFits
            == CurlMultiTransport.retriesEveryParkedRequest)
    }
}
