import CurlHTTP
import Foundation
import HTTPServing
import LoopbackHTTP
import Observability
import Synchronization
import Testing

@Suite("MetricsServer: /metrics, /healthz, /readyz over real HTTP")
struct MetricsServerTests {
    /// Starts a server on an ephemeral loopback port; stopped by the caller.
    func start(
        _ metrics: ReceiptMetrics = ReceiptMetrics(), readiness: ReadinessProbe = .constant(.ready),
        beforeScrape: @escaping @Sendable () -> Void = {}
    ) throws -> MetricsServer {
        try MetricsServer.start(
            host: "127.0.0.1", port: 0, registry: metrics.registry, readiness: readiness, beforeScrape: beforeScrape
        )
    }

    @Test("GET /metrics serves the registry as Prometheus text, with values recorded since the last scrape")
    func metrics() throws {
        let metrics = ReceiptMetrics()
        let server = try start(metrics)
        defer { server.stop() }
        #expect(server.port > 0)

        let first = try LoopbackHTTPClient.get("/metrics", port: server.port)
        #expect(first.status == 200)
        #expect(first.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let verified = #"receipt_worker_jobs_finished_total{state="verified",reason="none"}"#
        #expect(Exposition(text: first.text).value(verified) == 0)

        metrics.recordWritten(WrittenOutcome(state: "verified", kind: "verified", environment: "Production"))
        metrics.recordWritten(WrittenOutcome(state: "rejected", reason: "refunded", kind: "rejected"))
        metrics.recordAppleCall(endpoint: "sandbox", status: "0", seconds: 3)
        let second = Exposition(text: try LoopbackHTTPClient.get("/metrics", port: server.port).text)
        #expect(second.value(verified) == 1)
        #expect(second.value(#"receipt_worker_jobs_finished_total{state="rejected",reason="refunded"}"#) == 1)
        #expect(second.value(#"receipt_worker_ledger_credits_total{environment="Production"}"#) == 1)
        let sandboxCalls = #"receipt_worker_apple_request_duration_seconds_count{endpoint="sandbox",status="0"}"#
        #expect(second.value(sandboxCalls) == 1)
    }

    @Test("each scrape samples the gauges first (in flight, breaker)")
    func beforeScrape() throws {
        let metrics = ReceiptMetrics()
        let inFlight = Mutex(0)
        let server = try start(metrics) {
            metrics.setAppleRequestsInFlight(inFlight.withLock { $0 })
        }
        defer { server.stop() }
        inFlight.withLock { $0 = 42 }
        #expect(Exposition(text: try LoopbackHTTPClient.get("/metrics", port: server.port).text)
            .value("receipt_worker_apple_requests_in_flight") == 42)
        inFlight.withLock { $0 = 3 }
        #expect(Exposition(text: try LoopbackHTTPClient.get("/metrics", port: server.port).text)
            .value("receipt_worker_apple_requests_in_flight") == 3)
    }

    @Test("/healthz is 200 whatever readiness says")
    func healthz() throws {
        let server = try start(readiness: .constant(.notReady("database down")))
        defer { server.stop() }
        let response = try LoopbackHTTPClient.get("/healthz", port: server.port)
        #expect(response.status == 200)
        #expect(response.text == "ok\n")
    }

    @Test("/readyz: 503 with the one-line reason while the check fails, 200 once it passes")
    func readyz() throws {
        let ready = Mutex(false)
        let probe = ReadinessProbe(cacheFor: .zero) {
            ready.withLock { $0 }
                ? .ready : .notReady("migrations not applied: 006_next;\nrun `receipt-worker migrate`")
        }
        let server = try start(readiness: probe)
        defer { server.stop() }

        let failing = try LoopbackHTTPClient.get("/readyz", port: server.port)
        #expect(failing.status == 503)
        #expect(failing.text == "not ready: migrations not applied: 006_next; run `receipt-worker migrate`\n")

        ready.withLock { $0 = true }
        let passing = try LoopbackHTTPClient.get("/readyz", port: server.port)
        #expect(passing.status == 200)
        #expect(passing.text == "ready\n")
    }

    @Test("/readyz answers 503 within the timeout when the check hangs, and the server keeps serving")
    func readyzTimeout() throws {
        let release = DispatchSemaphore(value: 0)
        let probe = ReadinessProbe(timeout: .milliseconds(300), subject: "the database") {
            release.wait()
            return .ready
        }
        let server = try start(readiness: probe)
        defer {
            release.signal()
            server.stop()
        }
        let started = ContinuousClock.now
        let response = try LoopbackHTTPClient.get("/readyz", port: server.port)
        #expect(response.status == 503)
        #expect(response.text.contains("the database did not answer within 0.3 s"), "\(response.text)")
        #expect(ContinuousClock.now - started < .seconds(60), "/readyz waited for the hanging check")
        #expect(try LoopbackHTTPClient.get("/healthz", port: server.port).status == 200)
    }

    @Test("keep-alive: answers come back in order while a readiness check is awaited")
    func keepAliveOrder() throws {
        let probe = ReadinessProbe(cacheFor: .zero) {
            Thread.sleep(forTimeInterval: 0.2)
            return .notReady("slow and failing")
        }
        let server = try start(readiness: probe)
        defer { server.stop() }
        let responses = try LoopbackHTTPClient.exchange(
            port: server.port,
            "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        #expect(responses.map(\.status) == [503, 200, 200])
        #expect(responses.first?.text.contains("slow and failing") == true)
    }

    @Test("unknown paths are 404, other methods 405 (POST through CurlHTTP), HEAD has no body")
    func otherRequests() throws {
        let server = try start()
        defer { server.stop() }
        #expect(try LoopbackHTTPClient.get("/", port: server.port).status == 404)
        #expect(try LoopbackHTTPClient.get("/metrics/extra", port: server.port).status == 404)
        #expect(try LoopbackHTTPClient.get("/metrics?name=x", port: server.port).status == 200)

        let head = try LoopbackHTTPClient.get("/healthz", port: server.port, method: "HEAD")
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "3")

        CurlGlobal.initialize()
        let transport = try CurlMultiTransport()
        defer { transport.shutdown() }
        let posted = try transport.send(
            HTTPRequest(url: "http://127.0.0.1:\(server.port)/metrics", body: Array("x".utf8))
        ).get()
        #expect(posted.status == 405)
        #expect(posted.header("Allow") == "GET, HEAD")
    }

    @Test("the error's code tells a port out of range from one that cannot be bound")
    func errorCodes() throws {
        let outOfRange = #expect(throws: HTTPServerError.self) {
            try MetricsServer.start(
                host: "127.0.0.1", port: -1, registry: ReceiptMetrics().registry, readiness: .constant(.ready)
            )
        }
        #expect(outOfRange?.code == .invalidConfiguration)
        let server = try start()
        defer { server.stop() }
        let inUse = #expect(throws: HTTPServerError.self) {
            try MetricsServer.start(
                host: "127.0.0.1", port: server.port, registry: ReceiptMetrics().registry, readiness: .constant(.ready)
            )
        }
        #expect(inUse?.code == .bindFailed)
    }

    @Test("a port in use is refused with a message naming the settings; stop() is idempotent and frees the port")
    func portInUse() throws {
        let server = try start()
        #expect {
            try MetricsServer.start(
                host: "127.0.0.1", port: server.port, registry: ReceiptMetrics().registry, readiness: .constant(.ready)
            )
        } throws: { error in
            "\(error)".contains("METRICS_PORT") && "\(error)".contains("\(server.port)")
        }
        #expect(throws: HTTPServerError.self) {
            try MetricsServer.start(
                host: "127.0.0.1", port: 70_000, registry: ReceiptMetrics().registry, readiness: .constant(.ready)
            )
        }
        let port = server.port
        server.stop()
        server.stop()
        #expect(throws: (any Error).self) { try LoopbackHTTPClient.get("/healthz", port: port) }
    }
}
