import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny blocking HTTP/1.1 client over one POSIX socket to 127.0.0.1, so the server tests need neither URLSession
/// nor the client under test, and can send what CurlHTTP does not (GET, HEAD, pipelined requests, a connection left
/// idle). Keeps the connection open between requests (keep-alive) until `close()`.
public final class LoopbackHTTPClient {
    public struct Response: Sendable {
        public var status: Int
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: Data

        public var text: String { String(decoding: body, as: UTF8.self) }

        public func json<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(type, from: body)
        }
    }

    public enum Failure: Error, Equatable {
        case connect(Int32)
        case send(Int32)
        /// The peer reset the connection (ECONNRESET).
        case reset
        /// The peer closed the connection before a complete answer; `received` bytes had arrived.
        case closed(received: Int)
        /// Nothing more arrived within the read timeout.
        case timeout
        case malformed(String)
    }

    private var socket: Int32
    private var buffer = [UInt8]()

    /// Connects to `port` on 127.0.0.1; a read waits at most `readTimeoutSeconds`.
    public init(port: Int, readTimeoutSeconds: Int = 10) throws {
        #if canImport(Glibc)
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw Failure.connect(errno) }
        var timeout = timeval(tv_sec: readTimeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            _ = systemClose(socket)
            // The object is whole, so deinit runs after the throw: it must not close the number again (by then it
            // may be another thread's descriptor).
            socket = -1
            throw Failure.connect(code)
        }
    }

    deinit {
        close()
    }

    public func close() {
        if socket >= 0 {
            _ = systemClose(socket)
            socket = -1
        }
    }

    /// One request on a connection of its own that closes after it (`Connection: close`).
    public static func get(_ path: String, port: Int, method: String = "GET") throws -> Response {
        let request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let responses = try exchange(port: port, request, bodiless: method == "HEAD")
        guard let response = responses.first else { throw Failure.malformed("no answer to \(method) \(path)") }
        return response
    }

    /// Sends `requests` as they are (the last one should say `Connection: close`) on a connection of its own, and
    /// parses every answer until the server closes it. `bodiless`: the answers carry no body whatever their
    /// Content-Length (HEAD).
    public static func exchange(
        port: Int, _ requests: String, bodiless: Bool = false, readTimeoutSeconds: Int = 10
    ) throws -> [Response] {
        let client = try LoopbackHTTPClient(port: port, readTimeoutSeconds: readTimeoutSeconds)
        try client.sendAll(Array(requests.utf8))
        while true {
            do {
                try client.receiveMore()
            } catch Failure.closed {
                break
            }
        }
        var rest = client.buffer[...]
        var responses: [Response] = []
        while !rest.isEmpty {
            guard let head = try parseHead(&rest) else { throw Failure.malformed("incomplete head") }
            let length = bodiless ? 0 : head.headers["content-length"].flatMap(Int.init) ?? 0
            guard rest.count >= length else { throw Failure.malformed("incomplete body") }
            responses.append(Response(status: head.status, headers: head.headers, body: Data(rest.prefix(length))))
            rest = rest.dropFirst(length)
        }
        return responses
    }

    /// Sends one request and reads its answer (status line, headers, Content-Length body).
    public func request(
        _ method: String,
        _ path: String,
        body: Data = Data(),
        headers: [(String, String)] = []
    ) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        try sendAll(Array(head.utf8) + Array(body))
        return try readResponse()
    }

    /// Waits for the peer to close or reset the idle connection; returns how it ended.
    public func awaitClose() -> Failure {
        do {
            while true { try receiveMore() }
        } catch let failure as Failure {
            return failure
        } catch {
            return .malformed("\(error)")
        }
    }

    /// Sends `text` as it is and reads nothing: part of a request, or a request whose answer `readResponse()` reads.
    public func send(_ text: String) throws {
        try sendAll(Array(text.utf8))
    }

    /// Whether the connection is still open, asked without waiting: false once the peer closed or reset it.
    public var isOpen: Bool {
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count > 0 || (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                systemSend(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw Failure.send(errno) }
            offset += sent
        }
    }

    /// Reads one answer (status line, headers, Content-Length body).
    public func readResponse() throws -> Response {
        var rest = buffer[...]
        var parsed = try Self.parseHead(&rest)
        while parsed == nil {
            try receiveMore()
            rest = buffer[...]
            parsed = try Self.parseHead(&rest)
        }
        guard let head = parsed else { throw Failure.malformed("no head") }
        buffer.removeFirst(buffer.count - rest.count)
        guard let length = head.headers["content-length"].flatMap(Int.init) else {
            throw Failure.malformed("no Content-Length")
        }
        while buffer.count < length {
            do {
                try receiveMore()
            } catch Failure.closed {
                throw Failure.closed(received: buffer.count)
            }
        }
        let body = Data(buffer[..<length])
        buffer.removeFirst(length)
        return Response(status: head.status, headers: head.headers, body: body)
    }

    /// The status and headers at the start of `bytes`, which then start after the blank line; nil (and `bytes` as
    /// they were) when the head is not complete yet.
    private static func parseHead(
        _ bytes: inout ArraySlice<UInt8>
    ) throws -> (status: Int, headers: [String: String])? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let text = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure.malformed("status line: \(text.prefix(80))")
        }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[line[..<colon].lowercased()] = value
        }
        bytes = bytes[end.upperBound...]
        return (status, headers)
    }

    /// Appends what the socket has to `buffer`; throws on EOF, reset or timeout.
    private func receiveMore() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[..<count])
            return
        }
        if count == 0 { throw Failure.closed(received: buffer.count) }
        switch errno {
        case ECONNRESET: throw Failure.reset
        case EAGAIN, EWOULDBLOCK: throw Failure.timeout
        case let code: throw Failure.malformed("recv errno \(code)")
        }
    }
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}

private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    #if canImport(Glibc)
    Glibc.send(descriptor, bytes, count, flags)
    #else
    Darwin.send(descriptor, bytes, count, flags)
    #endif
}
