#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LoopbackHTTP
import Synchronization
import ThreadSupport
@testable import CurlHTTP

/// A tiny HTTP/1.1 server on 127.0.0.1 and an ephemeral port, one thread per connection.
/// What it answers depends on the request path: see `LoopbackServer+Routes.swift`.
final class LoopbackServer: Sendable {
    let port: Int
    private let listener: Int32
    private let state = Mutex(State())
    private let acceptThread = Mutex<DedicatedThread?>(nil)

    private struct State {
        var acceptedConnections = 0
        var requestsReceived = 0
        var requestsByPath: [String: Int] = [:]
        var clients: Set<Int32> = []
        var stopped = false
    }

    init() throws {
        (listener, port) = try LoopbackListener.listeningSocket(backlog: 1024)
        let thread = try DedicatedThread.start(name: "test-accept") { [self] in acceptLoop() }
        acceptThread.withLock { $0 = thread }
    }

    deinit {
        stop()
    }

    func url(_ path: String, scheme: String = "http") -> String {
        "\(scheme)://127.0.0.1:\(port)\(path)"
    }

    var acceptedConnections: Int { state.withLock { $0.acceptedConnections } }
    var requestsReceived: Int { state.withLock { $0.requestsReceived } }

    /// HTTP requests received for `path`.
    func requests(to path: String) -> Int { state.withLock { $0.requestsByPath[path, default: 0] } }

    /// Stops accepting, shuts down every open connection (ending hanging handlers) and closes the listener.
    func stop() {
        let alreadyStopped = state.withLock { state in
            defer { state.stopped = true }
            for client in state.clients { shutdown(client, Int32(SHUT_RDWR)) }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        acceptThread.withLock { $0.take() }?.join()
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let admitted = state.withLock { state in
                guard !state.stopped else { return false }
                state.acceptedConnections += 1
                state.clients.insert(client)
                return true
            }
            guard admitted else {
                close(client)
                return
            }
            do {
                try DedicatedThread.start(name: "test-conn") { [self] in serve(client) }.detach()
            } catch {
                finish(client, reset: true)
            }
        }
    }

    private func serve(_ client: Int32) {
        var connection = Connection(fd: client)
        var reset = false
        while let incoming = connection.readRequest() {
            state.withLock { state in
                state.requestsReceived += 1
                if case .http(_, let path, _, _) = incoming { state.requestsByPath[path, default: 0] += 1 }
            }
            let outcome = respond(to: incoming, on: connection)
            if outcome == .keepAlive { continue }
            reset = outcome == .reset
            break
        }
        finish(client, reset: reset)
    }

    /// Closes `client`, first forgetting it under the lock so `stop()` never touches a reused descriptor.
    private func finish(_ client: Int32, reset: Bool) {
        state.withLock { state in
            state.clients.remove(client)
            if reset {
                var linger = linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            }
            close(client)
        }
    }
}

/// What a handler wants done with the connection after answering.
enum ConnectionOutcome {
    case keepAlive
    case close
    /// Close with `SO_LINGER` 0, so the peer gets a TCP RST.
    case reset
}

/// A parsed request, or the first bytes of a TLS ClientHello sent to this plain-HTTP server.
enum IncomingRequest {
    case http(method: String, path: String, headers: [String: String], body: [UInt8])
    case tlsHandshake
}

/// Buffered blocking reads and writes on one accepted socket.
struct Connection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
    }

    /// The next request, or `nil` once the peer closed or the socket failed.
    mutating func readRequest() -> IncomingRequest? {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            if buffer.first == 0x16 { return .tlsHandshake }
            headEnd = buffer.firstRange(of: terminator)?.upperBound
            if headEnd == nil, !fill() { return nil }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: buffer[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        buffer.removeFirst(headEnd)
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length {
            if !fill() { return nil }
        }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return .http(method: String(parts[0]), path: String(parts[1]), headers: headers, body: body)
    }

    /// Writes all of `bytes`; `false` if the peer went away (no SIGPIPE: `MSG_NOSIGNAL`).
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if received < 0, errno == EINTR { continue }
            guard received > 0 else { return false }
            buffer.append(contentsOf: chunk[..<received])
            return true
        }
    }
}
