import AppStoreModel
import CurlHTTP
import Foundation
import Testing

@testable import FakeAppStore

/// The fake's HTTP/2 served at frame level (`HTTP2ConnectionHandler`), through the libcurl transport over TLS and the
/// curl tool over h2c: receive windows opened for request bodies past HTTP/2's initial 64 KiB, the body limit, the
/// refusal at the headers, and the faults that end a stream while its connection carries on.
@Suite("Fake App Store: HTTP/2 at frame level")
struct HTTP2FrameServerTests {
    @Test("bodies of about 300 KB, three at once on one connection, arrive whole: stream and connection windows reopened")
    func largeBodies() async throws {
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration()
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        let requests = (0..<3).map {
            HTTP2AndTLSTests.verify(server.productionURL, nonce: "large-\($0)", purchases: 2_400)
        }
        #expect(requests.allSatisfy { $0.body.count > 250_000 }, "\(requests.map(\.body.count))")
        let purchases = await withTaskGroup(of: String.self) { group in
            for request in requests {
                group.addTask {
                    switch await transport.send(request) {
                    case .success(let response):
                        return (try? HTTP2AndTLSTests.purchaseCount(response)).map(String.init) ?? "\(response.status)"
                    case .failure(let error):
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(purchases == ["2400", "2400", "2400"])
        #expect(server.connections().accepted == 1 && server.connections().http2 == 1, "\(server.connections())")
    }

    @Test("a body past maxBodyBytes: 413 on its stream, the rest of it not read; the connection carries on")
    func bodyTooLarge() async throws {
        var configuration = FakeAppStoreConfiguration()
        configuration.maxBodyBytes = 150_000
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: configuration
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        let large = HTTP2AndTLSTests.verify(server.productionURL, nonce: "too-large", purchases: 2_400)
        #expect(large.body.count > 250_000)
        let refused = try await transport.send(large).get()
        #expect(refused.status == 413)
        #expect(String(decoding: refused.body, as: UTF8.self) == "request body too large")
        #expect(refused.httpVersion == .http2)

        // Under the limit, past the initial stream window: read whole.
        let accepted = try await transport.send(
            HTTP2AndTLSTests.verify(server.productionURL, nonce: "under", purchases: 800)
        ).get()
        #expect(try HTTP2AndTLSTests.purchaseCount(accepted) == 800)
        #expect(server.stats().total == 1)
        #expect(server.connections().accepted == 1, "\(server.connections())")
    }

    @Test("X-Fake-Refuse: the stream is refused at its headers the first time its token is seen, answered after")
    func refusedAtTheHeaders() throws {
        let server = try FakeAppStoreServer.start(FakeAppStoreConfiguration(threads: 1))
        defer { server.stop() }
        let token = "refuse-\(UUID().uuidString)"
        // The curl tool sends a refused stream again on a fresh connection: one connection more per refusal.
        let arguments = ["--http2-prior-knowledge", "-H", "X-Fake-Refuse: \(token)", "-w", "\n%{http_code}"]
        let first = try HTTP2AndTLSTests.curl(arguments + [server.baseURL + "/stats"])
        #expect(first.hasSuffix("\n200"), "\(first)")
        #expect(server.connections().accepted == 2 && server.connections().http2 == 2, "\(server.connections())")
        let again = try HTTP2AndTLSTests.curl(arguments + [server.baseURL + "/stats"])
        #expect(again.hasSuffix("\n200"), "\(again)")
        #expect(server.connections().accepted == 3, "\(server.connections())")
    }

    @Test("truncated over HTTP/2: 200 with the first half of the JSON, Content-Length saying so; the stream ends")
    func truncated() async throws {
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration()
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        // The same receipt twice: truncated the first time, whole the second.
        let request = HTTP2AndTLSTests.verify(server.productionURL, nonce: "truncated", faults: [.truncated])
        let cut = try await transport.send(request).get()
        let whole = try await transport.send(request).get()
        #expect(cut.status == 200 && cut.httpVersion == .http2)
        #expect(try HTTP2AndTLSTests.status(whole) == 0)
        #expect(cut.body.count == whole.body.count / 2, "\(cut.body.count) of \(whole.body.count)")
        #expect(cut.body.elementsEqual(whole.body.prefix(cut.body.count)))
        #expect((try? JSONSerialization.jsonObject(with: Data(cut.body))) == nil)
        #expect(server.stats().statuses["production"] == ["truncated": 1, "0": 1])
        #expect(server.connections().accepted == 1, "\(server.connections())")
    }

    @Test("hang over HTTP/2: no answer, its stream reset after hangSeconds; the connection's other calls answered")
    func hangResetsTheStream() async throws {
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration(hangSeconds: 1)
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        var hanging = HTTP2AndTLSTests.verify(server.productionURL, nonce: "hang", faults: [.hang])
        // Far past the hang (1 s): libcurl 7.88 may see the reset late on a loaded machine, and only a timeout fails.
        hanging.totalTimeoutMilliseconds = 60_000
        let started = ContinuousClock.now
        async let hung = transport.send(hanging)
        var statuses: [Int] = []
        for index in 0..<3 {
            let response = try await transport.send(HTTP2AndTLSTests.verify(server.productionURL, nonce: "beside-\(index)"))
                .get()
            statuses.append(try HTTP2AndTLSTests.status(response))
        }
        let result = await hung
        let elapsed = ContinuousClock.now - started
        guard case .failure(let error) = result else {
            Issue.record("the hanging call was answered: \(result)")
            return
        }
        // A reset, not the call's own timeout; when libcurl 7.88 sees it can lag (under load, up to that timeout).
        #expect(error.kind == .connectionReset, "\(error)")
        #expect(elapsed >= .milliseconds(900), "\(elapsed)")
        #expect(statuses == [0, 0, 0])
        #expect(server.connections().accepted == 1, "\(server.connections())")
    }

    @Test("latency over HTTP/2: answers due together go out together, none before its time")
    func latencyIsHonoured() async throws {
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration(latencyMilliseconds: 300)
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        // The handshake first, so that only the latency is timed.
        _ = try await transport.send(HTTP2AndTLSTests.verify(server.productionURL, nonce: "warm-up")).get()
        let elapsed = await withTaskGroup(of: Duration?.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let started = ContinuousClock.now
                    let request = HTTP2AndTLSTests.verify(server.productionURL, nonce: "latency-\(index)")
                    guard case .success(let response) = await transport.send(request),
                          (try? HTTP2AndTLSTests.status(response)) == 0
                    else { return nil }
                    return ContinuousClock.now - started
                }
            }
            return await group.reduce(into: [Duration?]()) { $0.append($1) }
        }
        #expect(elapsed.allSatisfy { $0.map { $0 >= .milliseconds(300) } ?? false }, "\(elapsed)")
        // Together: answered one after another, the last would take 50 × 0.3 s = 15 s. 10 s leaves room for a
        // loaded machine (5 s did not always).
        #expect(elapsed.allSatisfy { $0.map { $0 < .seconds(10) } ?? false }, "\(elapsed)")
    }

    @Test("a receive window is opened back to its size once half of it or more is used, not before")
    func windowIncrement() {
        #expect(HTTP2ConnectionHandler.windowIncrement(window: 65_535, target: 65_535) == nil)
        #expect(HTTP2ConnectionHandler.windowIncrement(window: 32_768, target: 65_535) == nil)
        #expect(HTTP2ConnectionHandler.windowIncrement(window: 32_767, target: 65_535) == 32_768)
        #expect(HTTP2ConnectionHandler.windowIncrement(window: 0, target: 65_535) == 65_535)
        // A window below zero (this side lowering its initial window while a stream is open) is brought back too.
        #expect(HTTP2ConnectionHandler.windowIncrement(window: -1_000, target: 65_535) == 66_535)
        #expect(HTTP2ConnectionHandler.windowIncrement(window: Int(Int32.min), target: 65_535) == Int(Int32.max))
    }
}
