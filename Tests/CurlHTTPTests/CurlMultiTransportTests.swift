import Synchronization
import Testing
@testable import CurlHTTP

@Suite struct CurlMultiTransportTests {
    @Test func postBodyAndHeadersArriveIntact() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let body: [UInt8] = Array(#"{"receipt-data":"TUlJ"}"#.utf8) + [0, 0xFF, 0x80]
        let request = HTTPRequest(
            url: server.url("/echo"), body: body, headers: ["Content-Type: application/json", "X-Request-Id: abc-1"]
        )
        let response = try await transport.send(request).get()
        #expect(response.status == 200)
        #expect(response.body == body)
        #expect(response.header("x-request-id") == "abc-1")
        #expect(response.header("X-RECEIVED-CONTENT-TYPE") == "application/json")
        #expect(response.header("X-Received-Expect") == "none")
        #expect(response.header("X-Received-User-Agent") == "receipt-worker-tests")
        #expect(response.totalSeconds > 0)
        #expect(transport.inFlight == 0)
    }

    @Test func emptyBodyIsPosted() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let response = try await transport.send(HTTPRequest(url: server.url("/echo"))).get()
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
    }

    @Test func serviceUnavailableIsAResponseWithRetryAfter() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let response = try await transport.send(HTTPRequest(url: server.url("/unavailable"))).get()
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == LoopbackServer.retryAfterSeconds)
        #expect(String(decoding: response.body, as: UTF8.self).contains("<html>"))
    }

    @Test func interimResponseHeadersAreDropped() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let response = try await transport.send(HTTPRequest(url: server.url("/interim"))).get()
        #expect(response.status == 200)
        #expect(response.header("X-Interim") == nil)
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test func sequentialRequestsReuseOneConnection() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        for index in 0..<5 {
            let body = Array("request \(index)".utf8)
            let response = try await transport.send(HTTPRequest(url: server.url("/echo"), body: body)).get()
            #expect(response.body == body)
        }
        #expect(server.acceptedConnections == 1)
    }

    @Test func reusedHandlesFollowEachRequestsURLHeadersAndBody() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        for index in 0..<6 {
            let body = Array("request \(index)".utf8)
            let headers = index % 3 == 0 ? [] : ["Content-Type: text/plain", "X-Request-Id: id-\(index % 3)"]
            let echo = try await transport.send(HTTPRequest(url: server.url("/echo"), body: body, headers: headers)).get()
            #expect(echo.body == body)
            #expect(echo.header("X-Request-Id") == (index % 3 == 0 ? "" : "id-\(index % 3)"))
            // Without a Content-Type of its own, a POST carries libcurl's default.
            let contentType = index % 3 == 0 ? "application/x-www-form-urlencoded" : "text/plain"
            #expect(echo.header("X-Received-Content-Type") == contentType)
            #expect(echo.header("X-Received-Expect") == "none")
            // Another URL, and a failed transfer, between two uses of the same handle.
            let unavailable = try await transport.send(HTTPRequest(url: server.url("/unavailable"))).get()
            #expect(unavailable.status == 503)
            let truncated = await transport.send(HTTPRequest(url: server.url("/truncated"), body: body))
            #expect(truncated.failure != nil)
        }
    }

    @Test func reusedHandlesSwitchBetweenGetAndPost() async throws {
        let (server, transport) = try Self.start(.init(maxTotalConnections: 1))
        defer { Self.stop(server, transport) }
        let headers = ["Accept: application/json"]
        for index in 0..<4 {
            let body = Array("post \(index)".utf8)
            let post = try await transport.send(
                HTTPRequest(url: server.url("/echo"), method: .post, body: body, headers: headers)
            ).get()
            #expect(post.header("X-Received-Method") == "POST")
            #expect(post.header("X-Received-Content-Length") == String(body.count))
            #expect(post.body == body)

            // A GET right after a POST on the same handle carries neither the POST's body nor its length, even
            // when the request holds a body.
            let target = "/echo?revision=r\(index)"
            let get = try await transport.send(
                HTTPRequest(url: server.url(target), method: .get, body: Array("ignored".utf8), headers: headers)
            ).get()
            #expect(get.header("X-Received-Method") == "GET")
            #expect(get.header("X-Received-Target") == target)
            #expect(get.header("X-Received-Content-Length") == "none")
            #expect(get.body.isEmpty)

            // Two GETs in a row, then a POST with an empty body: still a POST.
            let again = try await transport.send(HTTPRequest(url: server.url("/echo"), method: .get)).get()
            #expect(again.header("X-Received-Method") == "GET")
            let empty = try await transport.send(HTTPRequest(url: server.url("/echo"), method: .post)).get()
            #expect(empty.header("X-Received-Method") == "POST")
            #expect(empty.header("X-Received-Content-Length") == "0")
        }
        // One connection, so every request went through the same reused easy handle.
        #expect(server.acceptedConnections == 1)
    }

    @Test func aFailedGetIsFollowedByAWorkingPost() async throws {
        let (server, transport) = try Self.start(.init(maxTotalConnections: 1))
        defer { Self.stop(server, transport) }
        let truncated = await transport.send(HTTPRequest(url: server.url("/truncated"), method: .get))
        #expect(truncated.failure != nil)
        let body = Array("after a failed GET".utf8)
        let post = try await transport.send(HTTPRequest(url: server.url("/echo"), body: body)).get()
        #expect(post.header("X-Received-Method") == "POST")
        #expect(post.body == body)
    }

    @Test func aKeepAliveConnectionTheServerClosedIsReplaced() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        for index in 0..<5 {
            let closing = try await transport.send(HTTPRequest(url: server.url("/answer-then-close"))).get()
            #expect(closing.body == Array("{}".utf8))
            // The idle connection's socket reports the close while libcurl is not watching it.
            try await Task.sleep(for: .milliseconds(20))
            let body = Array("after close \(index)".utf8)
            let echo = try await transport.send(HTTPRequest(url: server.url("/echo"), body: body)).get()
            #expect(echo.body == body)
        }
        #expect(server.acceptedConnections == 6)
        #expect(transport.inFlight == 0)
    }

    @Test func totalTimeoutFires() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let clock = ContinuousClock()
        let started = clock.now
        let result = await transport.send(HTTPRequest(url: server.url("/hang"), totalTimeoutMilliseconds: 1_000))
        let elapsed = clock.now - started
        let error = try #require(result.failure)
        #expect(error.kind == .timeout)
        #expect(error.curlCode == 28)
        #expect(error.message.contains("Timeout was reached"))
        // The upper bound only tells the timeout from a hang: with the whole suite on two cores, the answer once
        // reached this task 14 s after it was sent (a continuation waiting for a thread of the busy pool).
        #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(60))
    }

    @Test func refusedConnectionIsConnectFailed() async throws {
        let transport = try CurlMultiTransport()
        defer { transport.shutdown() }
        let port = try Self.closedPort()
        let result = await transport.send(HTTPRequest(url: "http://127.0.0.1:\(port)/echo"))
        #expect(try #require(result.failure).kind == .connectFailed)
    }

    @Test func truncatedBodyIsAnError() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let result = await transport.send(HTTPRequest(url: server.url("/truncated")))
        let error = try #require(result.failure)
        #expect(error.kind != .responseTooLarge && error.kind != .cancelled)
    }

    @Test func resetConnectionIsAnError() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let result = await transport.send(HTTPRequest(url: server.url("/reset")))
        let error = try #require(result.failure)
        #expect(error.kind == .connectionReset || error.kind == .other, "\(error)")
    }

    @Test(arguments: ["/huge", "/huge-unsized"])
    func oversizedBodyIsResponseTooLarge(path: String) async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let result = await transport.send(HTTPRequest(url: server.url(path), maxResponseBytes: 64 * 1024))
        #expect(try #require(result.failure).kind == .responseTooLarge)
    }

    @Test func bodyExactlyAtTheLimitIsAccepted() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let body = [UInt8](repeating: 0x7A, count: 1_000)
        let result = await transport.send(HTTPRequest(url: server.url("/echo"), body: body, maxResponseBytes: 1_000))
        #expect(try result.get().body == body)
    }

    @Test func manyConcurrentRequestsShareFewConnections() async throws {
        let configuration = CurlMultiTransport.Configuration(maxTotalConnections: 16, maxHostConnections: 8)
        let (server, transport) = try Self.start(configuration)
        defer { Self.stop(server, transport) }
        let count = 500
        let mismatches = await withTaskGroup(of: Bool.self) { group in
            for id in 0..<count {
                group.addTask {
                    let body = Array(#"{"id":\#(id)}"#.utf8)
                    let request = HTTPRequest(url: server.url("/echo"), body: body, headers: ["X-Request-Id: \(id)"])
                    guard case .success(let response) = await transport.send(request) else { return false }
                    return response.status == 200 && response.body == body && response.header("X-Request-Id") == "\(id)"
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 0 : 1) }
        }
        #expect(mismatches == 0)
        #expect(server.requestsReceived == count)
        #expect(server.acceptedConnections <= 16, "\(server.acceptedConnections) connections for \(count) requests")
        #expect(transport.inFlight == 0)
    }

    @Test func httpsToAPlainHTTPPortFailsCleanly() async throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let result = await transport.send(HTTPRequest(url: server.url("/echo", scheme: "https")))
        let error = try #require(result.failure)
        #expect(error.kind == .tls, "\(error)")
    }

    @Test func otherSchemesAreRefused() async throws {
        let transport = try CurlMultiTransport()
        defer { transport.shutdown() }
        let result = await transport.send(HTTPRequest(url: "file:///etc/passwd"))
        #expect(try #require(result.failure).kind == .other)
    }

    @Test func blockingSendReturnsTheResponse() throws {
        let (server, transport) = try Self.start()
        defer { Self.stop(server, transport) }
        let result: Result<HTTPResponse, HTTPError> = transport.send(HTTPRequest(url: server.url("/echo"), body: [1, 2, 3]))
        #expect(try result.get().body == [1, 2, 3])
    }
}

extension CurlMultiTransportTests {
    static func start(
        _ configuration: CurlMultiTransport.Configuration = .init()
    ) throws -> (LoopbackServer, CurlMultiTransport) {
        var configuration = configuration
        configuration.userAgent = "receipt-worker-tests"
        CurlGlobal.initialize()
        return (try LoopbackServer(), try CurlMultiTransport(configuration: configuration))
    }

    static func stop(_ server: LoopbackServer, _ transport: CurlMultiTransport) {
        transport.shutdown()
        server.stop()
    }

    /// A loopback port nobody listens on: bound, never listened to, then released.
    static func closedPort() throws -> Int {
        let server = try LoopbackServer()
        let port = server.port
        server.stop()
        return port
    }

    /// Waits (up to 30 s: long enough for a loaded machine; every use waits for something that must happen) until
    /// `condition` holds.
    static func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
