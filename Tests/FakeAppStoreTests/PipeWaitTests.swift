import CurlHTTP
import FakeAppStore
import Foundation
import Testing

/// Over real loopback TLS with HTTP/2: calls that fit on one connection share it, waiting for its handshake; the calls
/// beyond one connection's streams open connections of their own at once (`Configuration.waitsForMultiplexing`).
@Suite("Waiting for a connection that may multiplex: only while the calls fit on one")
struct PipeWaitTests {
    /// The fake over TLS answering after 300 ms, and a transport with five streams a connection, at most 8.
    private static func startFiveStreamsAConnection() throws -> (FakeAppStoreServer, CurlMultiTransport, URL) {
        try HTTP2AndTLSTests.startTLS(
            .init(maxTotalConnections: 16, maxHostConnections: 8, maxConcurrentStreams: 5),
            server: FakeAppStoreConfiguration(latencyMilliseconds: 300)
        )
    }

    /// Sends `count` calls at once and says how many were answered with status 0.
    private static func burst(_ count: Int, _ server: FakeAppStoreServer, _ transport: CurlMultiTransport) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    guard case .success(let response) = await transport.send(
                        HTTP2AndTLSTests.verify(server.productionURL, nonce: "pipewait-\(index)")
                    ) else { return false }
                    return (try? HTTP2AndTLSTests.status(response)) == 0
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    @Test("five calls at once, five streams a connection: one connection, the others waiting for its handshake")
    func callsThatFitShareOneConnection() async throws {
        let (server, transport, directory) = try Self.startFiveStreamsAConnection()
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        #expect(await Self.burst(5, server, transport) == 5)
        #expect(server.connections().accepted == 1 && server.connections().http2 == 1, "\(server.connections())")
    }

    @Test("ten calls at once, five streams a connection: the first five share one, the rest open more")
    func callsBeyondOneConnectionOpenMore() async throws {
        let (server, transport, directory) = try Self.startFiveStreamsAConnection()
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        #expect(await Self.burst(10, server, transport) == 10)
        // The first five wait for one connection; each of the five beyond it opens its own while the others are in
        // their handshakes (or shares one already up): 2 to 6 connections. Had no call waited, each would have opened
        // its own up to the cap of 8 (libcurl 7.88 opens 6 here whether or not the later five wait; libcurl 8 parks
        // them, which is what the rule avoids).
        let connections = server.connections()
        #expect(connections.accepted >= 2 && connections.accepted <= 6, "\(connections)")
        #expect(connections.http2 == connections.accepted, "\(connections)")
    }
}
