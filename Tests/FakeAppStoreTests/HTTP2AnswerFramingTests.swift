import CurlHTTP
import FakeAppStore
import Foundation
import Testing

/// Answers of 70-300 KB, many at once on one HTTP/2 connection, framed as Apple's servers frame them (and the fake
/// does): END_STREAM on the body's last DATA frame. libcurl 7.88 (Debian 12) left some of them a few KB short until
/// their timeout when the transport did not run a quiet connection again (`QuietConnectionChecks` in CurlHTTP; with
/// `quietConnectionRecheckMilliseconds: 0` the first test fails); each call here must end well before its timeout,
/// with the answer's every byte.
@Suite("HTTP/2 answers ending on their last DATA frame, many at once on one connection", .serialized)
struct HTTP2AnswerFramingTests {
    /// The calls' own timeout; every answer must arrive well within it (a debug build on two cores takes about 9 s
    /// for the 40 calls).
    static let timeoutMilliseconds = 60_000
    /// A stalled answer waits for the timeout; a slow machine (the whole suite on two cores) takes up to about 30 s.
    static let promptly: Duration = .seconds(45)

    @Test("one call at a time on a quiet connection, answers of 2-280 KB: each whole, none waiting for its timeout")
    func oneAtATime() async throws {
        // libcurl 7.88 alone left every answer past about 2 KiB a few KB short here (its 1 KiB receive buffer full,
        // the rest held back, the connection quiet), until the call's timeout.
        let (server, transport, directory) = try HTTP2AndTLSTests.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration()
        )
        defer { HTTP2AndTLSTests.stop(server, transport, directory) }
        var outcomes: [String] = []
        for (index, purchases) in [20, 40, 100, 700, 2_000, 2_800, 20, 40].enumerated() {
            var request = HTTP2AndTLSTests.verify(server.productionURL, nonce: "single-\(index)", purchases: purchases)
            // A stalled answer waits for this timeout and fails. Not a bound on how long a call may take: with the
            // whole suite running on two cores, the first call (its connection's TLS handshake) took 7 s once.
            request.totalTimeoutMilliseconds = 20_000
            switch await transport.send(request) {
            case .success(let response) where (try? HTTP2AndTLSTests.purchaseCount(response)) == purchases:
                continue
            case .success(let response):
                outcomes.append("\(purchases) purchases: \(response.status), \(response.body.count) bytes")
            case .failure(let error):
                outcomes.append("\(purchases) purchases: \(error)")
            }
        }
        #expect(outcomes.isEmpty, "\(outcomes)")
        #expect(server.connections().accepted == 1, "\(server.connections())")
    }

    @Test("over TLS (h2 through ALPN): 40 answers of 70-300 KB due together, all whole and prompt")
    func tls() async throws {
        try await Self.check(server: Self.fake(latencyMilliseconds: 200))
    }

    @Test("over TLS, 20 answered as soon as each request arrives")
    func tlsAtOnce() async throws {
        // With half the streams refused at their headers too: `HTTP2AndTLSTests.refusedBeforeTheBodyIsSentAgainWhole`.
        try await Self.check(server: Self.fake(latencyMilliseconds: 0), count: 20)
    }

    static func fake(latencyMilliseconds: Int) -> FakeAppStoreConfiguration {
        FakeAppStoreConfiguration(latencyMilliseconds: latencyMilliseconds)
    }

    /// 40 calls at once over one TLS connection (h2 through ALPN; this libcurl cannot reuse an h2c one), each
    /// answered 70-300 KB; each answer compared with the same receipt's answer fetched over HTTP/1.1 (the request
    /// date aside).
    static func check(server configuration: FakeAppStoreConfiguration, count: Int = 40) async throws {
        let transport = CurlMultiTransport.Configuration(
            maxHostConnections: 1, maxConcurrentStreams: 100,
            httpVersion: .http2OverTLS
        )
        let (server, client, directory) = try HTTP2AndTLSTests.startTLS(transport, server: configuration)
        defer { HTTP2AndTLSTests.stop(server, client, directory) }
        let purchases = (0..<count).map { 700 + $0 * 2_200 / max(1, count - 1) }
        let expected = try await Self.http1Answers(server, ca: directory, purchases: purchases)
        #expect(expected.first.map { $0.count >= 70_000 } == true && expected.last.map { $0.count <= 300_000 } == true,
                "\(expected.map(\.count))")
        let started = ContinuousClock.now
        let outcomes = await withTaskGroup(of: (Int, String, Duration).self) { group in
            for index in 0..<count {
                group.addTask {
                    var request = HTTP2AndTLSTests.verify(
                        server.productionURL, nonce: "framing-\(index)", purchases: purchases[index]
                    )
                    request.totalTimeoutMilliseconds = Self.timeoutMilliseconds
                    let result = await client.send(request)
                    let elapsed = ContinuousClock.now - started
                    switch result {
                    case .success(let response) where response.httpVersion != .http2:
                        return (index, "HTTP version \(response.httpVersion)", elapsed)
                    case .success(let response) where Self.normalized(response.body) == expected[index]:
                        return (index, "whole", elapsed)
                    case .success(let response):
                        let what = "\(response.status), \(response.body.count) of \(expected[index].count) bytes differ"
                        return (index, what, elapsed)
                    case .failure(let error):
                        return (index, "\(error)", elapsed)
                    }
                }
            }
            return await group.reduce(into: [(Int, String, Duration)]()) { $0.append($1) }
        }
        let failed = outcomes.filter { $0.1 != "whole" }.sorted { $0.0 < $1.0 }
        #expect(
            failed.isEmpty, "\(failed.count) of \(count) calls: \(failed.map { "#\($0.0) after \($0.2): \($0.1)" })"
        )
        let slowest = outcomes.map(\.2).max() ?? .zero
        #expect(slowest < Self.promptly, "the last answer came after \(slowest)")
    }

    /// The answers to the same receipts over HTTP/1.1 (framed by Content-Length alone), one at a time.
    static func http1Answers(
        _ server: FakeAppStoreServer, ca directory: URL, purchases: [Int]
    ) async throws -> [[UInt8]] {
        let transport = try CurlMultiTransport(configuration: .init(
            httpVersion: .http1_1, loopbackCAFile: directory.appendingPathComponent("ca.pem").path
        ))
        defer { transport.shutdown() }
        var answers: [[UInt8]] = []
        for (index, count) in purchases.enumerated() {
            let request = HTTP2AndTLSTests.verify(server.productionURL, nonce: "framing-\(index)", purchases: count)
            let response = try await transport.send(request).get()
            #expect(response.httpVersion == .http1_1 && response.status == 200)
            #expect(try HTTP2AndTLSTests.purchaseCount(response) == count)
            answers.append(Self.normalized(response.body))
        }
        return answers
    }

    /// `body` with its `request_date_ms` value (the clock when it was answered) blanked.
    static func normalized(_ body: [UInt8]) -> [UInt8] {
        let key = Array(#""request_date_ms":"#.utf8)
        guard let start = body.firstRange(of: key)?.upperBound else { return body }
        var end = start
        while end < body.count, body[end] != UInt8(ascii: ","), body[end] != UInt8(ascii: "}") { end += 1 }
        return Array(body[..<start]) + Array(#""""#.utf8) + Array(body[end...])
    }
}
