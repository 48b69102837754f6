import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// HTTP/1.1 requests written as text on one POSIX socket and read to the end. The tests need GET (what Prometheus
/// and the kubelet send), and CurlHTTP only POSTs.
enum RawHTTP {
    struct Response {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One GET; the connection closes after it.
    static func get(_ path: String, port: Int, method: String = "GET") throws -> Response {
        let request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let responses = try exchange(port: port, request, bodiless: method == "HEAD")
        guard let response = responses.first else { throw Failure(description: "no answer to \(method) \(path)") }
        return response
    }

    /// Sends `requests` (the last one should say `Connection: close`) and parses every answer until the server
    /// closes the connection. `bodiless`: the answers carry no body whatever their Content-Length (HEAD).
    static func exchange(
        port: Int, _ requests: String, bodiless: Bool = false, readTimeoutSeconds: Int = 10
    ) throws -> [Response] {
        #if canImport(Glibc)
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { _ = close(socket) }
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
        guard connected == 0 else { throw Failure(description: "connect to port \(port): errno \(errno)") }
        let bytes = Array(requests.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw Failure(description: "recv: errno \(errno) after \(received.count) bytes") }
            received.append(contentsOf: chunk[..<count])
        }
        return try parse(received, bodiless: bodiless)
    }

    /// Splits what arrived into responses, each framed by its Content-Length.
    static func parse(_ bytes: [UInt8], bodiless: Bool) throws -> [Response] {
        var rest = bytes[...]
        var responses: [Response] = []
        let separator = Array("\r\n\r\n".utf8)
        while !rest.isEmpty {
            guard let end = rest.firstRange(of: separator) else { throw Failure(description: "incomplete head") }
            var lines = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
                throw Failure(description: "bad status line")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
            let length = bodiless ? 0 : headers["content-length"].flatMap(Int.init) ?? 0
            let bodyStart = end.upperBound
            guard rest.endIndex - bodyStart >= length else { throw Failure(description: "incomplete body") }
            let body = rest[bodyStart..<(bodyStart + length)]
            responses.append(Response(status: status, headers: headers, body: String(decoding: body, as: UTF8.self)))
            rest = rest[(bodyStart + length)...]
        }
        return responses
    }
}
