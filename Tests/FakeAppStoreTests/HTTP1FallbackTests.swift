import CurlHTTP
import FakeAppStore
import Foundation
import Testing

/// A server that answers HTTP/1.1 where HTTP/2 was expected (its TLS handshake offers no h2): the calls still share
/// the transport's few connections, waiting for one, instead of opening a socket each.
@Suite("HTTP/1.1 fall-back at run time stays under the connection cap")
struct HTTP1FallbackTests {
    @Test("300 calls sized for HTTP/2 to an HTTP/1.1-only server: all answered over at most 4 sockets")
    func fallbackBoundedByTheCap() async throws {
        var transport = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: 300, to: ["https://127.0.0.1:1/verifyReceipt"], httpVersion: .http2WithLoopbackCleartext,
            maxHostConnections: 4
        )
        let demand = OpenFileLimit.demand(of: transport, otherFiles: 0)
        #expect(!demand.socketPerCall && demand.sockets == 4 + 16)
        var server = FakeAppStoreConfiguration(latencyMilliseconds: 20)
        server.http2 = false
        transport.idleTrimIntervalMilliseconds = 0
        let (fake, client, directory) = try HTTP2AndTLSTests.startTLS(transport, server: server)
        defer { HTTP2AndTLSTests.stop(fake, client, directory) }
        let count = 300
        let results = await withTaskGroup(of: HTTPVersion?.self) { group in
            for index in 0..<count {
                group.addTask {
                    guard case .success(let response) = await client.send(
                        HTTP2AndTLSTests.verify(fake.productionURL, nonce: "fallback-\(index)")
                    ), (try? HTTP2AndTLSTests.status(response)) == 0 else { return nil }
                    return response.httpVersion
                }
            }
            return await group.reduce(into: [HTTPVersion?]()) { $0.append($1) }
        }
        #expect(results.count == count)
        #expect(results.allSatisfy { $0 == .http1_1 }, "\(results.filter { $0 != .http1_1 }.count) not answered in 1.1")
        let statistics = client.statistics
        #expect(statistics.peakOpenSockets <= 4, "\(statistics)")
        #expect(statistics.peakOpenSockets <= demand.sockets)
        #expect(fake.connections().accepted <= 4 && fake.connections().http2 == 0, "\(fake.connections())")
    }
}
