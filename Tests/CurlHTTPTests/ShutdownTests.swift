import Synchronization
import Testing
@testable import CurlHTTP

/// Collects completion results from the transport thread.
final class Results: Sendable {
    private let results = Mutex<[Result<HTTPResponse, HTTPError>]>([])
    var all: [Result<HTTPResponse, HTTPError>] { results.withLock { $0 } }
    func record(_ result: Result<HTTPResponse, HTTPError>) { results.withLock { $0.append(result) } }
}

@Suite struct ShutdownTests {
    @Test func shutdownCancelsHangingRequestsPromptly() async throws {
        let (server, transport) = try CurlMultiTransportTests.start()
        defer { server.stop() }
        let results = Results()
        for _ in 0..<5 {
            transport.send(HTTPRequest(url: server.url("/hang")), completion: results.record)
        }
        try await CurlMultiTransportTests.eventually { server.requestsReceived == 5 }
        #expect(server.requestsReceived == 5)
        #expect(transport.inFlight == 5)

        let clock = ContinuousClock()
        let started = clock.now
        transport.shutdown()
        #expect(clock.now - started < .seconds(20), "waited for the requests' 30 s timeout")
        #expect(results.all.count == 5)
        #expect(results.all.allSatisfy { $0.failure?.kind == .cancelled })
        #expect(transport.inFlight == 0)

        transport.shutdown()
        let late = await transport.send(HTTPRequest(url: server.url("/echo")))
        #expect(late.failure?.kind == .cancelled)
    }

    @Test func droppingTheTransportCancelsItsRequests() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let results = Results()
        var transport: CurlMultiTransport? = try CurlMultiTransport()
        transport?.send(HTTPRequest(url: server.url("/hang")), completion: results.record)
        try await CurlMultiTransportTests.eventually { server.requestsReceived == 1 }
        transport = nil
        #expect(results.all.count == 1)
        #expect(results.all.first?.failure?.kind == .cancelled)
    }

    @Test func shutdownFromACompletionDoesNotDeadlock() async throws {
        let (server, transport) = try CurlMultiTransportTests.start()
        defer { server.stop() }
        let results = Results()
        await withCheckedContinuation { continuation in
            transport.send(HTTPRequest(url: server.url("/echo"))) { result in
                results.record(result)
                transport.shutdown()
                continuation.resume()
            }
        }
        let late = await transport.send(HTTPRequest(url: server.url("/echo")))
        #expect(late.failure?.kind == .cancelled)
        #expect(try results.all.first?.get().status == 200)
    }

    @Test func cancellingTheTaskAbortsTheTransfer() async throws {
        let (server, transport) = try CurlMultiTransportTests.start()
        defer { CurlMultiTransportTests.stop(server, transport) }
        let task = Task { await transport.send(HTTPRequest(url: server.url("/hang"))) }
        try await CurlMultiTransportTests.eventually { server.requestsReceived == 1 }
        let clock = ContinuousClock()
        let started = clock.now
        task.cancel()
        let result = await task.value
        #expect(result.failure?.kind == .cancelled)
        #expect(clock.now - started < .seconds(20), "waited for the requests' 30 s timeout")
        #expect(transport.inFlight == 0)

        let response = await transport.send(HTTPRequest(url: server.url("/echo"), body: [7]))
        #expect(try response.get().body == [7], "the transport keeps working after a cancellation")
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let (server, transport) = try CurlMultiTransportTests.start()
        defer { CurlMultiTransportTests.stop(server, transport) }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await transport.send(HTTPRequest(url: server.url("/echo")))
        }
        #expect(await task.value.failure?.kind == .cancelled)
        #expect(server.requestsReceived == 0)
    }
}
