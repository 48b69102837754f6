import CurlHTTP
import Testing

/// How many files `work` counts for its calls to Apple: a socket per call only where calls cannot share connections.
@Suite("Open files needed for the calls in flight")
struct OpenFileDemandTests {
    static let apple = ["https://buy.itunes.apple.com/verifyReceipt", "https://sandbox.itunes.apple.com/verifyReceipt"]

    @Test("30,000 calls in flight over HTTP/2 fit under a 20,000-file limit: the connection cap is counted")
    func http2CountsTheConnectionCap() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 30_000, to: Self.apple, httpVersion: .http2WithLoopbackCleartext
        )
        let demand = OpenFileLimit.demand(of: transport, otherFiles: 64)
        // 64 connections to each of the two hosts, and a few for OCSP responders.
        #expect(transport.maxHostConnections == 64)
        #expect(transport.maxTotalConnections == 2 * 64 + CurlMultiTransport.Configuration.otherHostConnections)
        #expect(demand == .init(files: 144 + 64, sockets: 144, socketPerCall: false))
        #expect(demand.files <= 20_000)
        // Streams enough that the calls fit on the per-host connections.
        #expect(transport.maxConcurrentStreams * transport.maxHostConnections >= 30_000)
        // Idle handles for a whole wave still kept: the cap is on connections, not on calls.
        #expect(transport.maxIdleHandles == 30_000)
    }

    @Test("30,000 calls in flight over HTTP/1.1 need a socket each: refused under a 20,000-file limit")
    func http1CountsASocketPerCall() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 30_000, to: Self.apple, httpVersion: .http1_1
        )
        let demand = OpenFileLimit.demand(of: transport, otherFiles: 64)
        #expect(demand == .init(files: 30_064, sockets: 30_000, socketPerCall: true))
        #expect(demand.files > 20_000)
        #expect(demand.reason.contains("a socket per call in flight"), "\(demand.reason)")
    }

    @Test("a URL that may not speak HTTP/2 (plain http to another host) counts a socket per call")
    func plainHTTPCountsASocketPerCall() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 30_000, to: ["https://buy.itunes.apple.com/verifyReceipt", "http://apple.example/v"],
            httpVersion: .http2WithLoopbackCleartext
        )
        #expect(OpenFileLimit.demand(of: transport).socketPerCall)
        #expect(OpenFileLimit.demand(of: transport).sockets == 30_000)
    }

    @Test("APPLE_MAX_CONNECTIONS with HTTP/1.1 caps the sockets too: calls wait for a connection")
    func explicitCapWithHTTP1() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 30_000, to: Self.apple, httpVersion: .http1_1, maxHostConnections: 500
        )
        #expect(OpenFileLimit.demand(of: transport).sockets == 2 * 500 + 16)
        #expect(!OpenFileLimit.demand(of: transport).socketPerCall)
    }

    @Test("one host named twice (production and sandbox paths of one server) counts once")
    func hostsCountedOnce() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 30_000, to: ["https://127.0.0.1:8443/verifyReceipt", "https://127.0.0.1:8443/sandbox"],
            httpVersion: .http2WithLoopbackCleartext
        )
        #expect(transport.maxTotalConnections == 64 + 16)
        #expect(URLHost.authority("HTTPS://user@Buy.Example:443/x?y") == "https://buy.example:443")
    }

    @Test("fewer calls than the cap: no more connections than calls")
    func fewCalls() {
        let transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 10, to: Self.apple, httpVersion: .http2WithLoopbackCleartext
        )
        #expect(transport.maxTotalConnections == 64)
    }
}
