extension LoopbackServer {
    static let hugeBodySize = 4 << 20
    static let retryAfterSeconds = "7"

    /// Answers one request according to its path:
    /// - `/echo`: 200 JSON with the request body, echoing `X-Request-Id`, `Content-Type`, `Expect`, `User-Agent`,
    ///   the method and the `Content-Length` it received (`none` when absent). Any query string is ignored.
    /// - `/unavailable`: 503 with an HTML body and `Retry-After`.
    /// - `/interim`: a `100 Continue` carrying `X-Interim`, then 200.
    /// - `/truncated`: `Content-Length: 1000`, 100 bytes, close.
    /// - `/reset`: TCP RST without answering.
    /// - `/hang`: never answers.
    /// - `/answer-then-close`: 200 with `Content-Length` and no `Connection: close`, then closes the connection (a
    ///   server dropping an idle keep-alive connection).
    /// - `/redirect`: `302 Found` to `/echo`.
    /// - `/huge`: a 4 MiB body with `Content-Length`; `/huge-unsized`: the same, delimited by closing.
    /// A TLS ClientHello gets a plain `400 Bad Request`, as a real HTTP server would send.
    func respond(to incoming: IncomingRequest, on connection: Connection) -> ConnectionOutcome {
        guard case .http(let method, let target, let headers, let body) = incoming else {
            connection.write(Self.head(400, "Bad Request", ["Connection: close", "Content-Length: 0"]))
            return .close
        }
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        switch path {
        case "/echo":
            let echoed = [
                "Content-Type: application/json",
                "X-Request-Id: \(headers["x-request-id"] ?? "")",
                "X-Received-Content-Type: \(headers["content-type"] ?? "")",
                "X-Received-Expect: \(headers["expect"] ?? "none")",
                "X-Received-User-Agent: \(headers["user-agent"] ?? "")",
                "X-Received-Method: \(method)",
                "X-Received-Target: \(target)",
                "X-Received-Content-Length: \(headers["content-length"] ?? "none")",
                "Content-Length: \(body.count)",
            ]
            return connection.write(Self.head(200, "OK", echoed) + body) ? .keepAlive : .close
        case "/unavailable":
            let html = Array("<html><body><h1>Service Unavailable</h1></body></html>".utf8)
            let fields = ["Content-Type: text/html", "Retry-After: \(Self.retryAfterSeconds)", "Content-Length: \(html.count)"]
            return connection.write(Self.head(503, "Service Unavailable", fields) + html) ? .keepAlive : .close
        case "/interim":
            let interim = Self.head(100, "Continue", ["X-Interim: yes"])
            let final = Self.head(200, "OK", ["Content-Type: application/json", "Content-Length: 2"]) + Array("{}".utf8)
            return connection.write(interim + final) ? .keepAlive : .close
        case "/truncated":
            connection.write(Self.head(200, "OK", ["Content-Length: 1000"]) + [UInt8](repeating: 0x61, count: 100))
            return .close
        case "/redirect":
            let fields = ["Location: /echo", "Content-Length: 0"]
            return connection.write(Self.head(302, "Found", fields)) ? .keepAlive : .close
        case "/reset":
            return .reset
        case "/hang":
            return .keepAlive
        case "/answer-then-close":
            connection.write(Self.head(200, "OK", ["Content-Type: application/json", "Content-Length: 2"]) + Array("{}".utf8))
            return .close
        case "/huge", "/huge-unsized":
            let fields = path == "/huge" ? ["Content-Length: \(Self.hugeBodySize)"] : ["Connection: close"]
            guard connection.write(Self.head(200, "OK", fields)) else { return .close }
            let chunk = [UInt8](repeating: 0x62, count: 64 * 1024)
            for _ in 0..<(Self.hugeBodySize / chunk.count) {
                guard connection.write(chunk) else { break }
            }
            return .close
        default:
            connection.write(Self.head(404, "Not Found", ["Content-Length: 0"]))
            return .keepAlive
        }
    }

    private static func head(_ status: Int, _ reason: String, _ fields: [String]) -> [UInt8] {
        Array((["HTTP/1.1 \(status) \(reason)"] + fields).map { $0 + "\r\n" }.joined().utf8) + Array("\r\n".utf8)
    }
}
