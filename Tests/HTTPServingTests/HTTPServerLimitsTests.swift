import Foundation
import HTTPServing
import Logging
import LoopbackHTTP
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// `HTTPServer` over real loopback sockets: clients that send their request slowly, or nothing, are cut off by the
/// server (the client reads end of stream or a reset), and connections past the cap are closed at once. Each test
/// makes the timeout it checks short and the others long, so only that check can close the connection; a client
/// that is never closed reads a timeout instead, and fails the test.
@Suite("HTTPServer bounds its connections: header, body and idle timeouts, a connection cap")
struct HTTPServerLimitsTests {
    /// A read waits this long for the server to act: far past every short timeout used here.
    static let patience = 15

    @Test("a client that sends nothing, half a head, or a head a byte at a time is closed at the header timeout")
    func headerTimeout() throws {
        let server = try Self.start(HTTPServerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(60),
            idleTimeout: .seconds(60)))
        defer { server.stop() }

        let silent = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
        let halfHead = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
        try halfHead.send("POST / HTTP/1.1\r\nHost: x\r\n")
        let started = ContinuousClock.now
        #expect(Self.closedByServer(silent.awaitClose()))
        #expect(Self.closedByServer(halfHead.awaitClose()))
        #expect(ContinuousClock.now - started >= .milliseconds(800), "closed before the header timeout")

        // A byte every 100 ms keeps reads coming: the head as a whole is still due 1 s after the connection's start.
        let trickle = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
        let head = Array("POST / HTTP/1.1\r\nHost: x\r\nX-Padding: " + String(repeating: "a", count: 200))
        var sent = 0
        while sent < head.count, trickle.isOpen {
            try? trickle.send(String(head[sent]))
            sent += 1
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(sent < 100, "still open after \(sent) bytes over \(sent / 10) s")
        #expect(Self.closedByServer(trickle.awaitClose()))

        // A prompt request is answered.
        #expect(try LoopbackHTTPClient.get("/", port: server.port).status == 200)
    }

    @Test("a body not whole within the body timeout of its head is closed; one in time is answered")
    func bodyTimeout() throws {
        let server = try Self.start(HTTPServerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(3),
            idleTimeout: .seconds(60)))
        defer { server.stop() }
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"

        let stalled = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
        try stalled.send(head + "abc")
        let started = ContinuousClock.now
        // Slow but in time: the rest of the body 1.5 s after the head (the header timeout has passed by then).
        let slow = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
        try slow.send(head + "abc")
        Thread.sleep(forTimeInterval: 1.5)
        try slow.send("defghij")
        #expect(try slow.readResponse().status == 200)

        #expect(Self.closedByServer(stalled.awaitClose()))
        #expect(ContinuousClock.now - started >= .milliseconds(2_500), "closed before the body timeout")
    }

    @Test("a kept-alive connection is closed after the idle timeout; the next request is timed from its first bytes")
    func idleTimeout() throws {
        let idle = try Self.start(HTTPServerLimits(headerTimeout: .seconds(60), bodyTimeout: .seconds(60),
            idleTimeout: .seconds(1)))
        defer { idle.stop() }
        let client = try LoopbackHTTPClient(port: idle.port, readTimeoutSeconds: Self.patience)
        #expect(try client.request("GET", "/").status == 200)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try client.request("GET", "/").status == 200, "kept alive between requests")
        let answered = ContinuousClock.now
        #expect(Self.closedByServer(client.awaitClose()))
        #expect(ContinuousClock.now - answered >= .milliseconds(800), "closed before the idle timeout")

        // Idle for long (60 s), but a next request that starts gets the header timeout (1 s), not the rest of idle.
        let header = try Self.start(HTTPServerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(60),
            idleTimeout: .seconds(60)))
        defer { header.stop() }
        let second = try LoopbackHTTPClient(port: header.port, readTimeoutSeconds: Self.patience)
        #expect(try second.request("GET", "/").status == 200)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(second.isOpen, "idle, within the idle timeout")
        try second.send("GET / HTTP/1.1\r\nHo")
        #expect(Self.closedByServer(second.awaitClose()))
    }

    @Test("past the connection cap a new connection is closed at once, with one warning; a freed place is taken again")
    func connectionCap() throws {
        let log = CapturedLog()
        // The timeouts out of the way: only the cap may close a connection here.
        let server = try Self.start(
            HTTPServerLimits(
                headerTimeout: .seconds(60), bodyTimeout: .seconds(60), idleTimeout: .seconds(60), maxConnections: 3
            ),
            logger: log.logger
        )
        defer { server.stop() }
        let held = try (0..<3).map { _ in try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience) }
        for client in held {
            #expect(try client.request("GET", "/").status == 200)
        }
        for _ in 0..<3 {
            let refused = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
            #expect(Self.closedByServer(refused.awaitClose()))
        }
        #expect(held.allSatisfy { $0.isOpen })
        #expect(try held[0].request("GET", "/").status == 200, "the connections under the cap are served")
        let warnings = log.messages.filter { $0.contains("at the cap") }
        #expect(warnings.count == 1, "\(log.messages)")
        #expect(warnings.first?.contains("max_connections=3") == true, "\(warnings)")

        held[0].close()
        // The server counts the place free once it has seen the close.
        let deadline = ContinuousClock.now + .seconds(Self.patience)
        var answer: Int?
        while answer == nil, ContinuousClock.now < deadline {
            let client = try LoopbackHTTPClient(port: server.port, readTimeoutSeconds: Self.patience)
            answer = try? client.request("GET", "/").status
            if answer == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(answer == 200)
    }

    @Test("limits out of range are refused at start")
    func invalidLimits() {
        for limits in [
            HTTPServerLimits(maxConnections: 0), HTTPServerLimits(headerTimeout: .zero),
            HTTPServerLimits(bodyTimeout: .seconds(-1)), HTTPServerLimits(idleTimeout: .seconds(86_401)),
        ] {
            #expect(throws: HTTPServerError.self) { try Self.start(limits) }
        }
    }

    // MARK: Helpers

    /// What a client reads when the server closed its connection: end of stream, or a reset (data was unread).
    static func closedByServer(_ ending: LoopbackHTTPClient.Failure) -> Bool {
        switch ending {
        case .closed, .reset: true
        default: false
        }
    }

    /// A server on an ephemeral loopback port answering every request 200 "ok", kept alive.
    static func start(_ limits: HTTPServerLimits, logger: Logger = Logger(label: "test")) throws -> HTTPServer {
        try HTTPServer.start(
            host: "127.0.0.1", port: 0, limits: limits, purpose: "test", settings: ("TEST_HOST", "TEST_PORT"),
            logger: logger, makeHandler: { OKHandler() }
        )
    }
}

/// Answers each request, once its body has arrived, 200 "ok"; closes after it when the request does not keep alive.
private final class OKHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var keepAlive = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "3")
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "ok\n")))), promise: nil)
            let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let channel = context.channel
                written.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }
}

/// A logger whose lines (message and metadata) are kept, for checking what was logged.
private final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var messages: [String] { lines.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    fileprivate func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            log.append(([event.level.rawValue, "\(event.message)"] + fields).joined(separator: " "))
        }
    }
}
