import AppStoreModel
import CurlHTTP
import FakeAppStore
import Foundation
import Testing

/// The libcurl transport against the fake App Store over real loopback sockets: HTTP/2 with prior knowledge and
/// through ALPN, HTTP/1.1 where the server offers only that, TLS with a certificate authority made at test time, and
/// the connections counted on the server's side.
@Suite("HTTP/2 and TLS between the transport and the fake App Store")
struct HTTP2AndTLSTests {
    @Test("the fake answers HTTP/2 with prior knowledge (h2c) and HTTP/1.1 on the same port, counting each")
    func cleartextHTTP2Server() async throws {
        let server = try FakeAppStoreServer.start(FakeAppStoreConfiguration(threads: 1))
        defer { server.stop() }
        let http2 = try Self.curl(["--http2-prior-knowledge", "-w", "\n%{http_version}", server.baseURL + "/stats"])
        #expect(http2.hasSuffix("\n2"), "\(http2)")
        let http1 = try Self.curl(["--http1.1", "-w", "\n%{http_version}", server.baseURL + "/stats"])
        #expect(http1.hasSuffix("\n1.1"), "\(http1)")
        let connections = server.connections()
        #expect(connections.accepted == 2 && connections.http2 == 1 && connections.http1 == 1, "\(connections)")
    }

    @Test("plain http to loopback: HTTP/2 with prior knowledge where libcurl can reuse such a connection, else 1.1")
    func cleartextTransport() async throws {
        let (server, transport) = try Self.start(.init(httpVersion: .http2WithLoopbackCleartext))
        defer { Self.stop(server, transport) }
        let expected: HTTPVersion = CurlMultiTransport.supportsCleartextHTTP2 ? .http2 : .http1_1
        for index in 0..<3 {
            let response = try await transport.send(Self.verify(server.productionURL, nonce: "h2c-\(index)")).get()
            #expect(response.httpVersion == expected)
            #expect(try Self.status(response) == 0)
        }
        let connections = server.connections()
        #expect(connections.accepted == 1, "\(connections)")
        #expect(transport.statistics.responses == [expected: 3])
        #expect(transport.statistics.socketsOpened == 1)
    }

    @Test("500 calls at once share at most 4 HTTP/2 connections, multiplexed: all outstanding at the fake together")
    func manyCallsShareFewConnections() async throws {
        // The fake counts a request when it arrives and answers 15 s later (5 s was too short for 500 TLS requests
        // to all arrive on a loaded machine). Over 4 connections that carry one call at a time, 500 requests could
        // not all have arrived before 125 answers: 500 / 4 × 15 s = 1875 s.
        var configuration = FakeAppStoreConfiguration(latencyMilliseconds: 15_000)
        configuration.http2MaxConcurrentStreams = 200
        let (server, transport, directory) = try Self.startTLS(
            .init(maxHostConnections: 4, maxConcurrentStreams: 200), server: configuration
        )
        defer { Self.stop(server, transport, directory) }
        let count = 500
        let calls = Task {
            await withTaskGroup(of: Int?.self) { group in
                for index in 0..<count {
                    group.addTask {
                        guard case .success(let response) = await transport.send(
                            Self.verify(server.productionURL, nonce: "many-\(index)", timeoutMilliseconds: 60_000)
                        ), response.httpVersion == .http2 else { return nil }
                        return try? Self.status(response)
                    }
                }
                return await group.reduce(into: [Int?]()) { $0.append($1) }
            }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while server.stats().total < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let arrived = server.stats().total
        // Each outstanding HTTP/2 POST holds libcurl's upload buffer until it is answered: from the pool.
        let pooledBuffers = CurlGlobal.uploadBufferPool.inUse
        let statuses = await calls.value
        #expect(arrived == count, "only \(arrived) of \(count) requests were outstanding at the fake at once")
        // (From libcurl 8.7.0 a transfer has no upload buffer of its own, and the pool serves none.)
        if CurlGlobal.libcurlGivesEachTransferAnUploadBuffer {
            #expect(pooledBuffers >= count, "\(pooledBuffers) pooled upload buffers for \(count) calls in flight")
        } else {
            // Only libcurl's few buffers of the pool's size (18-19 with libcurl 8.14.1), not one per call.
            #expect(pooledBuffers < count / 4, "\(pooledBuffers) pooled buffers for \(count) calls in flight")
        }
        #expect(CurlGlobal.uploadBufferPool.fallbacks == 0)
        #expect(statuses.filter { $0 == 0 }.count == count)
        let connections = server.connections()
        #expect(connections.accepted <= 4 && connections.accepted >= 1, "\(connections)")
        #expect(connections.http1 == 0, "\(connections)")
        #expect(transport.statistics.peakOpenSockets <= 4)
    }

    @Test("after a burst, idle handles no call took for a whole interval are cleaned up and their buffers released")
    func burstMemoryIsGivenBack() async throws {
        var configuration = FakeAppStoreConfiguration(latencyMilliseconds: 300)
        configuration.http2MaxConcurrentStreams = 400
        let interval = 8_000
        let (server, transport, directory) = try Self.startTLS(
            .init(
                maxTotalConnections: 512, maxHostConnections: 2, maxConcurrentStreams: 400,
                idleTrimIntervalMilliseconds: interval
            ),
            server: configuration
        )
        defer { Self.stop(server, transport, directory) }
        let releasedBefore = CurlGlobal.uploadBufferPool.released
        let count = 300
        let burstStart = ContinuousClock.now
        #expect(await Self.answeredCalls(count, to: server, transport, nonce: "burst") == count)
        // The burst held a handle per call: all are kept until a whole interval passes without them being needed, so
        // none can be gone less than an interval after the first went back, which was after the burst started. (Not
        // after the first answer reached its caller: on a loaded machine callers ran seconds after their handles went
        // back.) On a machine so loaded that the check comes later than that, some may rightly be gone already, and
        // it is not made.
        let keep = CurlMultiTransport.Configuration.minIdleHandles
        let idleAfterBurst = transport.statistics.idleEasyHandles
        if ContinuousClock.now - burstStart < .milliseconds(interval) {
            #expect(idleAfterBurst > keep)
        }
        // 300 - 64 kept handles - 64 buffers the pool keeps = 172 when run alone; 22 fewer leave room for buffers that
        // other tests' transports take from the shared pool while this one waits.
        // From libcurl 8.7.0 the handles hold no upload buffers: none to release.
        let expectedReleases = CurlGlobal.libcurlGivesEachTransferAnUploadBuffer ? UInt64(count - 2 * keep - 22) : 0
        let deadline = ContinuousClock.now + .seconds(60)
        while transport.statistics.idleEasyHandles > keep
            || CurlGlobal.uploadBufferPool.released - releasedBefore < expectedReleases, ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(transport.statistics.idleEasyHandles == keep)
        if CurlGlobal.libcurlGivesEachTransferAnUploadBuffer {
            // Each cleaned-up handle gave its upload buffer back to the pool, which keeps the last `minIdleHandles`
            // given back resident and released the rest's pages.
            #expect(CurlGlobal.uploadBufferPool.released - releasedBefore >= expectedReleases)
        } else {
            // libcurl 8 lends one buffer to every transfer in turn: the burst left no buffer per call in the pool to
            // give back, only libcurl's few (18-19 with 8.14.1, and what other tests' transports hold meanwhile).
            let inUse = CurlGlobal.uploadBufferPool.inUse
            #expect(inUse < count / 4, "\(inUse) pooled buffers still held after a burst of \(count) calls")
        }

        // The kept handles and new ones serve the next calls.
        for index in 0..<3 {
            let response = try await transport.send(Self.verify(server.productionURL, nonce: "after-\(index)")).get()
            #expect(try Self.status(response) == 0)
        }
    }

    @Test("past the release threshold, bodies are read by callback and their buffers released once sent; all intact")
    func uploadBuffersReleasedOnceSent() async throws {
        var configuration = FakeAppStoreConfiguration(latencyMilliseconds: 1_000)
        configuration.http2MaxConcurrentStreams = 300
        let (server, transport, directory) = try Self.startTLS(
            .init(maxHostConnections: 2, maxConcurrentStreams: 300, uploadBufferReleaseThreshold: 0), server: configuration
        )
        defer { Self.stop(server, transport, directory) }
        let discardedBefore = CurlGlobal.uploadBufferPool.discarded
        // Small bodies; bodies of about 100 KB (several fills of the 16 KiB buffer, past HTTP/2's initial 64 KiB
        // flow-control window); and refused streams, which libcurl sends again, rewinding the body (seek callback).
        let small = (0..<200).map { Self.verify(server.productionURL, nonce: "release-\($0)") }
        let large = (0..<4).map { Self.verify(server.productionURL, nonce: "large-\($0)", purchases: 800) }
        let refused = (0..<3).map { Self.verify(server.productionURL, nonce: "refused-\($0)", faults: [.refused]) }
        #expect(large.allSatisfy { $0.body.count > 90_000 })
        let requests = small + large + refused
        let purchases = await withTaskGroup(of: Int?.self) { group in
            for request in requests {
                group.addTask {
                    guard case .success(let response) = await transport.send(request),
                          (try? Self.status(response)) == 0
                    else { return nil }
                    return try? Self.purchaseCount(response)
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(purchases.filter { $0 == 1 }.count == small.count + refused.count, "\(purchases.filter { $0 != 1 })")
        #expect(purchases.filter { $0 == 800 }.count == large.count)
        // Each refused request arrived twice: refused, then answered.
        #expect(server.stats().statuses["production"]?["refused"] == refused.count)
        #expect(server.stats().total == requests.count + refused.count)
        let discarded = CurlGlobal.uploadBufferPool.discarded - discardedBefore
        let readByCallback = transport.statistics.bodiesReadByCallback
        if CurlGlobal.libcurlGivesEachTransferAnUploadBuffer {
            #expect(readByCallback >= requests.count, "\(readByCallback) bodies read by callback")
            #expect(discarded >= UInt64(requests.count), "\(discarded) buffers released for \(requests.count) calls")
        } else {
            // libcurl 8 lends one buffer to every transfer in turn: giving its pages back once a body is sent would only
            // fault them in again for the next request, so past the threshold too the transport gives libcurl each
            // body whole (CURLOPT_POSTFIELDS), and no transfer's body is read by callback to be released.
            #expect(readByCallback == 0, "\(readByCallback) bodies read by callback under libcurl 8")
        }

        // The same handles, below the threshold again (one call at a time): bodies given as before, a GET, a POST.
        let quiet = try Self.startTLS(.init(maxHostConnections: 1, uploadBufferReleaseThreshold: 2), server: .init())
        defer { Self.stop(quiet.0, quiet.1, quiet.2) }
        for index in 0..<3 {
            let busy = await withTaskGroup(of: Bool.self) { group in
                for call in 0..<8 {
                    group.addTask {
                        let request = Self.verify(quiet.0.productionURL, nonce: "mixed-\(index)-\(call)")
                        guard case .success(let response) = await quiet.1.send(request) else { return false }
                        return (try? Self.status(response)) == 0
                    }
                }
                return await group.reduce(true) { $0 && $1 }
            }
            #expect(busy)
            let single = try await quiet.1.send(Self.verify(quiet.0.productionURL, nonce: "single-\(index)")).get()
            #expect(try Self.status(single) == 0)
            let stats = try await quiet.1.send(HTTPRequest(url: quiet.0.baseURL + "/stats", method: .get)).get()
            #expect(stats.status == 200 && !stats.body.isEmpty, "\(stats.status) \(String(decoding: stats.body, as: UTF8.self))")
        }
    }

    @Test("streams refused before their bodies went out (flow control held them) are sent again whole")
    func refusedBeforeTheBodyIsSentAgainWhole() async throws {
        // One connection, 40 bodies of about 100 KB: HTTP/2's 64 KiB connection window holds most of them back, their
        // first 16 KiB already read into libcurl's buffers. The server refuses 20 of the streams, once each, as their
        // headers arrive, so libcurl retries them with nothing of the body sent (no seek); the pre-request callback
        // restarts the body. Without it the retries carried on from where the reads had stopped, and arrived cut short
        // (with 7.88; libcurl 8.7.0 and later has no upload buffer per transfer to release, so the body goes as it
        // does below the threshold, and libcurl sends it again from the start itself).
        // A refused stream closes its connection once the connection's other streams are done, and the retries go out
        // on a new one. libcurl 8.14.1 under a one-connection cap left some of them, now and then most, waiting until
        // the 5 s connect timeout (7.88 sends them as soon as the connection closes): with libcurl 8 the cap is two, and
        // the test asks what 8.14 guarantees (below).
        let (server, transport, directory) = try Self.startTLS(
            .init(
                maxHostConnections: CurlMultiTransport.isLibcurl8OrLater ? 2 : 1, maxConcurrentStreams: 100,
                uploadBufferReleaseThreshold: 0
            ),
            server: FakeAppStoreConfiguration(latencyMilliseconds: 200)
        )
        defer { Self.stop(server, transport, directory) }
        let count = 40
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<count {
                group.addTask {
                    var request = Self.verify(server.productionURL, nonce: "held-\(index)", purchases: 800)
                    if index.isMultiple(of: 2) { request.headers.append("X-Fake-Refuse: held-\(index)") }
                    switch await transport.send(request) {
                    case .success(let response):
                        guard (try? Self.status(response)) == 0, let purchases = try? Self.purchaseCount(response) else {
                            return "answer \(String(decoding: response.body.prefix(80), as: UTF8.self))"
                        }
                        return "\(purchases) purchases"
                    case .failure(let error):
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        let answered = outcomes.filter { $0 == "800 purchases" }.count
        let others = outcomes.filter { $0 != "800 purchases" }
        if CurlMultiTransport.isLibcurl8OrLater {
            // What libcurl 8.14.1 guarantees here: every call that is answered was sent whole (a body cut short is
            // answered 21002: an "answer …" outcome), and a retry it left waiting fails as a transport error (most
            // often a timeout with nothing received; deployment.md, libcurl versions: the job spends an attempt). Seen
            // in CI with two connections allowed: 17 of the 40 timed out, all with 0 bytes received.
            #expect(others.allSatisfy { !$0.hasPrefix("answer ") }, "\(others)")
            #expect(answered >= count / 4, "\(others)")
            #expect(server.stats().total >= answered)
        } else {
            #expect(answered == count, "\(others)")
            #expect(server.stats().total == count)
        }
    }

    @Test("a reset fault resets its own HTTP/2 stream only: a retryable connection error, the other calls answered")
    func resetIsPerStream() async throws {
        let (server, transport, directory) = try Self.startTLS(
            .init(maxHostConnections: 1), server: FakeAppStoreConfiguration(latencyMilliseconds: 200)
        )
        defer { Self.stop(server, transport, directory) }
        let results = await withTaskGroup(of: (Int, Result<HTTPResponse, HTTPError>).self) { group in
            for index in 0..<10 {
                group.addTask {
                    let request = Self.verify(
                        server.productionURL, nonce: "reset-\(index)", faults: index == 0 ? [.reset] : []
                    )
                    return (index, await transport.send(request))
                }
            }
            return await group.reduce(into: [Int: Result<HTTPResponse, HTTPError>]()) { $0[$1.0] = $1.1 }
        }
        guard case .failure(let error) = results[0] else {
            Issue.record("the reset call was answered: \(String(describing: results[0]))")
            return
        }
        #expect(error.kind == .connectionReset, "\(error)")
        for index in 1..<10 {
            #expect((try? results[index]?.get().status) == 200, "call \(index): \(String(describing: results[index]))")
        }
        #expect(server.connections().accepted == 1)
    }

    @Test("a server offering only HTTP/1.1 through ALPN is spoken to in HTTP/1.1")
    func http1WhenOnlyOffered() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem").path
        var configuration = FakeAppStoreConfiguration(tls: FakeAppStoreTLS(authorityCertificatePath: ca))
        configuration.http2 = false
        let (server, transport) = try Self.start(.init(loopbackCAFile: ca), server: configuration)
        defer { Self.stop(server, transport) }
        #expect(server.productionURL.hasPrefix("https://127.0.0.1:"))
        let response = try await transport.send(Self.verify(server.productionURL, nonce: "h1")).get()
        #expect(response.httpVersion == .http1_1)
        #expect(try Self.status(response) == 0)
        #expect(server.connections().http1 == 1 && server.connections().http2 == 0)
    }

    @Test("HTTP/2 with prior knowledge to a server that speaks only HTTP/1.1 fails as a transport error")
    func priorKnowledgeToHTTP1Server() async throws {
        var configuration = FakeAppStoreConfiguration()
        configuration.http2 = false
        let (server, transport) = try Self.start(.init(httpVersion: .http2WithLoopbackCleartext), server: configuration)
        defer { Self.stop(server, transport) }
        let result = await transport.send(Self.verify(server.productionURL, nonce: "mismatch"))
        switch result {
        case .success(let response):
            // Without prior knowledge (see supportsCleartextHTTP2), plain http is HTTP/1.1, which this server speaks.
            #expect(!CurlMultiTransport.supportsCleartextHTTP2, "an HTTP/1.1-only server answered HTTP/2")
            #expect(response.httpVersion == .http1_1)
        case .failure(let error):
            #expect(CurlMultiTransport.supportsCleartextHTTP2, "\(error)")
            #expect([.protocolError, .connectionReset].contains(error.kind), "\(error)")
        }
    }

    @Test("TLS with the fake's certificate authority trusted: verified, HTTP/2 chosen through ALPN")
    func trustedTLS() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem").path
        let (server, transport) = try Self.start(
            .init(loopbackCAFile: ca), server: FakeAppStoreConfiguration(tls: FakeAppStoreTLS(authorityCertificatePath: ca))
        )
        defer { Self.stop(server, transport) }
        #expect(try String(contentsOfFile: ca, encoding: .utf8) == server.tlsAuthorityPEM)
        for host in ["127.0.0.1", "localhost"] {
            let url = server.productionURL.replacingOccurrences(of: "127.0.0.1", with: host)
            let response = try await transport.send(Self.verify(url, nonce: "tls-\(host)")).get()
            #expect(response.httpVersion == .http2, "\(host)")
            #expect(try Self.status(response) == 0, "\(host)")
        }
    }

    @Test("TLS without the certificate authority trusted: a certificate error, retryable as a transport failure")
    func untrustedTLS() async throws {
        let (server, transport) = try Self.start(.init(), server: FakeAppStoreConfiguration(tls: FakeAppStoreTLS()))
        defer { Self.stop(server, transport) }
        let result = await transport.send(Self.verify(server.productionURL, nonce: "untrusted"))
        guard case .failure(let error) = result else {
            Issue.record("a certificate from an untrusted authority was accepted")
            return
        }
        #expect(error.kind == .tls, "\(error)")
        #expect(error.curlCode == 60, "\(error)")  // CURLE_PEER_FAILED_VERIFICATION
        #expect(server.stats().total == 0)
    }

    @Test("TLS with a trusted authority but a certificate for another host name: refused for the name")
    func wrongHostName() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem").path
        let (server, transport) = try Self.start(
            .init(loopbackCAFile: ca),
            server: FakeAppStoreConfiguration(
                tls: FakeAppStoreTLS(names: ["wrong.example"], authorityCertificatePath: ca)
            )
        )
        defer { Self.stop(server, transport) }
        let result = await transport.send(Self.verify(server.productionURL, nonce: "wrong-host"))
        guard case .failure(let error) = result else {
            Issue.record("a certificate for wrong.example was accepted for 127.0.0.1")
            return
        }
        #expect(error.kind == .tls, "\(error)")
        #expect(error.curlCode == 60, "\(error)")
        #expect(error.message.contains("subject name") || error.message.contains("host"), "\(error)")
        #expect(server.stats().total == 0)
    }

    @Test("HTTP/1.1 forced: one connection per call in flight, every answer HTTP/1.1")
    func forcedHTTP1() async throws {
        let (server, transport) = try Self.start(
            .init(httpVersion: .http1_1), server: FakeAppStoreConfiguration(latencyMilliseconds: 200)
        )
        defer { Self.stop(server, transport) }
        let versions = await withTaskGroup(of: HTTPVersion?.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try? await transport.send(Self.verify(server.productionURL, nonce: "h1-\(index)")).get().httpVersion
                }
            }
            return await group.reduce(into: [HTTPVersion?]()) { $0.append($1) }
        }
        #expect(versions == Array(repeating: .http1_1, count: 8))
        #expect(server.connections().accepted == 8 && server.connections().http1 == 8)
        #expect(transport.statistics.peakOpenSockets == 8)
    }
}

extension HTTP2AndTLSTests {
    static func start(
        _ transport: CurlMultiTransport.Configuration, server: FakeAppStoreConfiguration = .init()
    ) throws -> (FakeAppStoreServer, CurlMultiTransport) {
        var server = server
        server.threads = 1
        CurlGlobal.initialize()
        let fake = try FakeAppStoreServer.start(server)
        do {
            return (fake, try CurlMultiTransport(configuration: transport))
        } catch {
            fake.stop()
            throw error
        }
    }

    static func stop(_ server: FakeAppStoreServer, _ transport: CurlMultiTransport, _ directory: URL? = nil) {
        transport.shutdown()
        server.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The fake serving TLS with its authority written to a temporary directory, and a transport trusting it there.
    static func startTLS(
        _ transport: CurlMultiTransport.Configuration, server: FakeAppStoreConfiguration
    ) throws -> (FakeAppStoreServer, CurlMultiTransport, URL) {
        let directory = try temporaryDirectory()
        let ca = directory.appendingPathComponent("ca.pem").path
        var server = server
        server.tls = FakeAppStoreTLS(authorityCertificatePath: ca)
        var transport = transport
        transport.loopbackCAFile = ca
        let (fake, client) = try start(transport, server: server)
        return (fake, client, directory)
    }

    /// Runs the curl command-line tool quietly with `arguments`; returns what it printed.
    static func curl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sS"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// A verifyReceipt call for a scenario receipt with one purchase, distinct by `nonce`.
    /// Starts `count` verifyReceipt calls to `server` at once (nonces `nonce-0`, `nonce-1`, …) and says how many
    /// were answered with status 0.
    static func answeredCalls(
        _ count: Int, to server: FakeAppStoreServer, _ transport: CurlMultiTransport, nonce: String
    ) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    guard case .success(let response) = await transport.send(
                        verify(server.productionURL, nonce: "\(nonce)-\(index)")
                    ) else { return false }
                    return (try? status(response)) == 0
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    static func verify(
        _ url: String, nonce: String, faults: [ScenarioReceipt.Fault] = [], purchases: Int = 1,
        timeoutMilliseconds: Int = 20_000
    ) -> HTTPRequest {
        let receipt = ScenarioReceipt(
            environment: "Production", bundleId: "com.example",
            inApp: (0..<purchases).map {
                InAppTransaction(productId: "lifetime", transactionId: "\(5001 + $0)", purchaseDateMs: 1_700_000_000_000)
            },
            faults: faults, nonce: nonce
        )
        let body = Array(#"{"receipt-data":"\#(receipt.base64())"}"#.utf8)
        return HTTPRequest(
            url: url, body: body, headers: ["Content-Type: application/json"],
            totalTimeoutMilliseconds: timeoutMilliseconds
        )
    }

    /// The `status` of a verifyReceipt answer.
    static func status(_ response: HTTPResponse) throws -> Int {
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["status"] as? Int, "no status in \(String(decoding: response.body, as: UTF8.self))")
    }

    /// How many purchases (`receipt.in_app`) a verifyReceipt answer lists.
    static func purchaseCount(_ response: HTTPResponse) throws -> Int {
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let receipt = try #require(object?["receipt"] as? [String: Any])
        return try #require(receipt["in_app"] as? [Any]).count
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h2-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}
