import AppStoreModel
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny blocking HTTP/1.1 client over one POSIX socket, so the server tests need neither URLSession nor the client
/// under test. Keeps the connection open between requests (keep-alive) until `close()`.
final class TestHTTPClient {
    struct Response {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: Data

        func json<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(type, from: body)
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Failure: Error, Equatable {
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

    init(port: Int, readTimeoutSeconds: Int = 10) throws {
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
            throw Failure.connect(code)
        }
    }

    deinit {
        close()
    }

    func close() {
        if socket >= 0 {
            _ = systemClose(socket)
            socket = -1
        }
    }

    /// Sends one request and reads its answer (status line, headers, Content-Length body).
    func request(
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

    /// POSTs a verifyReceipt body.
    func verify(_ path: String, receiptData: String, password: String? = nil) throws -> Response {
        var object: [String: String] = ["receipt-data": receiptData]
        object["password"] = password
        let body = try JSONSerialization.data(withJSONObject: object)
        return try request("POST", path, body: body, headers: [("Content-Type", "application/json")])
    }

    /// POSTs a verifyReceipt body and decodes Apple's JSON answer.
    func answer(_ path: String, _ receiptData: String, password: String? = nil) throws -> VerifyReceiptResponse {
        try verify(path, receiptData: receiptData, password: password).json(VerifyReceiptResponse.self)
    }

    /// POSTs a verifyReceipt body and returns the `status` of the answer.
    func status(_ path: String, _ receiptData: String, password: String? = nil) throws -> Int {
        try answer(path, receiptData, password: password).status
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure.send(errno) }
            offset += sent
        }
    }

    private func readResponse() throws -> Response {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffer.firstRange(of: separator)?.lowerBound
            if headerEnd == nil { try receiveMore() }
        }
        let headerText = String(decoding: buffer[..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + separator.count)

        var lines = headerText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure.malformed("status line: \(headerText.prefix(80))")
        }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard let length = headers["content-length"].flatMap(Int.init) else {
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
        return Response(status: status, headers: headers, body: body)
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

    /// Waits for the peer to close or reset the idle connection; returns how it ended.
    func awaitClose() -> Failure {
        do {
            while true { try receiveMore() }
        } catch let failure as Failure {
            return failure
        } catch {
            return .malformed("\(error)")
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
