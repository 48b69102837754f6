import CurlHTTP
import FakeAppStore
import Foundation
import Testing

/// Over real loopback TLS with HTTP/2, whichever libcurl is linked: which requests wait for a connection that may
/// multiplex them (`CURLOPT_PIPEWAIT`, counted in `TransportStatistics.multiplexWaits`), and the connections that
/// follow. Under `waitsOnlyWhileOneConnectionFits` only the calls that fit on one connection to their host wait.
@Suite("Waiting for a connection that may multiplex: every call, or only those that fit on one")
struct PipeWaitTests {
    /// Two fakes over TLS answering after `latency` ms, and one transport trusting both, five streams a connection and
    /// at most 8 connections a host.
    private static func start(
        limited: Bool, latency: Int = 2_000
    ) throws -> (FakeAppStoreServer, FakeAppStoreServer, CurlMultiTransport, URL) {
        let directory = try HTTP2AndTLSTests.temporaryDirectory()
        var servers: [FakeAppStoreServer] = []
        do {
            for name in ["a", "b"] {
                var configuration = FakeAppStoreConfiguration(latencyMilliseconds: latency)
                configuration.threads = 1
                configuration.tls = FakeAppStoreTLS(authorityCertificatePath: directory.appendingPathComponent("\(name).pem").path)
                servers.append(try FakeAppStoreServer.start(configuration))
            }
            let bundle = directory.appendingPathComponent("both.pem")
            try servers.compactMap(\.tlsAuthorityPEM).joined(separator: "\n").write(to: bundle, atomically: true, encoding: .utf8)
            var configuration = CurlMultiTransport.Configuration(
                maxTotalConnections: 32, maxHostConnections: 8, maxConcurrentStreams: 5
            )
            configuration.loopbackCAFile = bundle.path
            configuration.waitsOnlyWhileOneConnectionFits = limited
            CurlGlobal.initialize()
            return (servers[0], servers[1], try CurlMultiTransport(configuration: configuration), directory)
        } catch {
            for server in servers { server.stop() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func stop(_ a: FakeAppStoreServer, _ b: FakeAppStoreServer, _ transport: CurlMultiTransport, _ directory: URL) {
        transport.shutdown()
        a.stop()
        b.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits until `transport` has `count` transfers in flight (sent or waiting inside libcurl), at most 30 s.
    private static func inFlight(_ transport: CurlMultiTransport, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while transport.inFlight < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test("five calls at once on five streams: all wait, and share one connection")
    func callsThatFitShareOneConnection() async throws {
        let (a, b, transport, directory) = try Self.start(limited: true, latency: 300)
        defer { Self.stop(a, b, transport, directory) }
        #expect(await HTTP2AndTLSTests.answeredCalls(5, to: a, transport, nonce: "pipewait-five") == 5)
        #expect(transport.statistics.multiplexWaits == 5)
        #expect(a.connections().accepted == 1 && a.connections().http2 == 1, "\(a.connections())")
    }

    @Test("ten calls to one host at five streams: only the first five wait; every call does when not limited")
    func onlyTheFirstConnectionsWorthWaits() async throws {
        for limited in [true, false] {
            let (a, b, transport, directory) = try Self.start(limited: limited)
            defer { Self.stop(a, b, transport, directory) }
            #expect(await HTTP2AndTLSTests.answeredCalls(10, to: a, transport, nonce: "pipewait-ten") == 10)
            #expect(transport.statistics.multiplexWaits == (limited ? 5 : 10), "limited: \(limited)")
            // However many waited, the cap holds.
            #expect(a.connections().accepted <= 8, "\(a.connections())")
        }
    }

    @Test("the calls in flight are counted by host: another host's first calls wait while the first host's are many")
    func countedByHost() async throws {
        let (a, b, transport, directory) = try Self.start(limited: true)
        defer { Self.stop(a, b, transport, directory) }
        // Ten calls in flight to the first host (five of them waited), then three to the second.
        async let first = HTTP2AndTLSTests.answeredCalls(10, to: a, transport, nonce: "pipewait-first")
        try await Self.inFlight(transport, 10)
        let second = await HTTP2AndTLSTests.answeredCalls(3, to: b, transport, nonce: "pipewait-second")
        #expect(await first == 10)
        #expect(second == 3)
        #expect(transport.statistics.multiplexWaits == 5 + 3)
        #expect(b.connections().accepted == 1, "\(b.connections())")
    }
}
