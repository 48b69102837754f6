import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 and an ephemeral port that keeps every request it receives and answers each
/// with `status` and `Connection: close`: the receiving end for a server under test that sends requests (the fake
/// App Store's notifications). One request per connection, served on the accepting thread.
public final class LoopbackHTTPReceiver: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// Names lowercased.
        public var headers: [String: String]
        public var body: Data

        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public var port: Int { listener.port }
    private let listener: LoopbackListener
    private let state: Mutex<State>

    private struct State {
        var requests: [Request] = []
        var status: Int
    }

    /// Listens; answers `status` until `answer(with:)` changes it.
    public init(status: Int = 200) throws {
        state = Mutex(State(status: status))
        listener = try LoopbackListener()
        listener.start(name: "loopback-receiver") { [self] client in serve(client) }
    }

    deinit {
        stop()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String = "/") -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// The requests received so far, oldest first.
    public var requests: [Request] {
        state.withLock { $0.requests }
    }

    /// The status later requests are answered with.
    public func answer(with status: Int) {
        state.withLock { $0.status = status }
    }

    /// Stops accepting and closes the listener; waits for the accepting thread to end. Idempotent.
    public func stop() {
        listener.stop()
    }

    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let request = Self.parse(buffer) {
                let status = state.withLock { state in
                    state.requests.append(request)
                    return state.status
                }
                let answer = "HTTP/1.1 \(status) Status\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                _ = Array(answer.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return
            }
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// The request in `bytes` once its head and Content-Length body are complete.
    private static func parse(_ bytes: [UInt8]) -> Request? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        var lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[line[..<colon].lowercased()] = value
        }
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        guard bytes.count - end.upperBound >= length else { return nil }
        return Request(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
            body: Data(bytes[end.upperBound..<(end.upperBound + length)])
        )
    }
}
