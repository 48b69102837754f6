import FakeAppStore
import Foundation
import LoopbackHTTP
import Testing

/// The request body limit over HTTP/1.1 (its HTTP/2 side is in `HTTP2FrameServerTests`).
@Suite("Fake App Store over HTTP/1.1: the body limit")
struct BodyLimitHTTP1Tests {
    @Test("a body past maxBodyBytes: 413 and the connection closes; one at the limit is read")
    func bodyTooLarge() throws {
        var configuration = FakeAppStoreConfiguration(threads: 1)
        configuration.maxBodyBytes = 100_000
        try withServer(configuration) { server in
            let client = try LoopbackHTTPClient(port: server.port)
            let tooLarge = try client.request("POST", production, body: Data(repeating: UInt8(ascii: "x"), count: 150_000))
            #expect(tooLarge.status == 413)
            #expect(tooLarge.text == "request body too large")
            #expect(tooLarge.headers["connection"] == "close", "\(tooLarge.headers)")
            let ended = client.awaitClose()
            #expect(ended == .closed(received: 0) || ended == .reset, "\(ended)")

            // At the limit: read and answered (not JSON, so status 21000), on a connection of its own.
            let atLimit = try LoopbackHTTPClient(port: server.port)
            let answer = try atLimit.request("POST", production, body: Data(repeating: UInt8(ascii: "x"), count: 100_000))
            #expect(answer.status == 200)
            let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
            #expect(object?["status"] as? Int == 21000, "\(answer.text)")
            #expect(server.stats().total == 1)
        }
    }
}
