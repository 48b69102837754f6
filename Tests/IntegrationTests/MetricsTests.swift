#if os(Linux)
import AppStoreClient
import AppStoreModel
import AppStoreSignedData
import CurlHTTP
import FakeAppStore
import Foundation
import Glibc
import LoopbackHTTP
import PostgresClient
import ReceiptQueue
import ReceiptRules
import Testing
import Workers

/// The operations port of the real `receipt-worker work` process (METRICS_PORT), and `scripts/check-deploy.sh`.
@Suite("Metrics and probes of a running worker", .serialized, .ownThread)
struct MetricsTests {
    @Test("a real run: verdicts, credits, the sandbox hop and the queue show in /metrics; /readyz is 200")
    func realRun() throws {
        let h = try Harness()
        for index in 0..<3 {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("mv-\(index)")]), order: "metrics-\(index)")
        }
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("mr-1", cancelled: true)]), order: "metrics-r")
        _ = try h.enqueue(
            Harness.receipt(environment: "Sandbox", purchases: [Harness.purchase("ms-1")]), order: "metrics-s"
        )
        // A notification with no signature (alg none): rejected by the workers as invalid_signature.
        _ = try h.scalar("SELECT receive_notification($1)", [NotificationReceiverTests.algNone(signature: "c2ln")])
        let port = try freePort()
        let worker = try startWorker(h, metricsPort: port)
        defer { worker.signal(SIGTERM) }

        let final = "SELECT count(*) FROM receipt_jobs WHERE finished_at IS NOT NULL"
        try #require(try waitUntil(60) { try h.scalar(final) == "5" }, "jobs not final:\n\(worker.output)")
        // The counters are recorded just after the verdicts are written; the queue gauges every 5 s.
        var scrape = Scrape(text: "")
        _ = try waitUntil(20) {
            scrape = Scrape(text: try LoopbackHTTPClient.get("/metrics", port: port).text)
            return scrape.value(#"receipt_worker_queue_jobs{state="verified"}"#) == 4
                && scrape.value(#"receipt_worker_jobs_finished_total{state="rejected",reason="refunded"}"#) == 1
                && scrape.value(#"receipt_worker_notifications_total{state="rejected",reason="invalid_signature"}"#) == 1
        }
        #expect(scrape.value(#"receipt_worker_notifications_total{state="rejected",reason="invalid_signature"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_notifications_total{state="applied",reason="none"}"#) == 0)
        #expect(try h.scalar("SELECT state || ':' || reason FROM receipt_notifications") == "rejected:invalid_signature")
        #expect(scrape.value(#"receipt_worker_jobs_finished_total{state="verified",reason="none"}"#) == 4)
        #expect(scrape.value(#"receipt_worker_jobs_finished_total{state="rejected",reason="refunded"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Production"}"#) == 3)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Sandbox"}"#) == 1)
        let calls = "receipt_worker_apple_request_duration_seconds_count"
        #expect(scrape.value(calls + #"{endpoint="sandbox",status="0"}"#) == 1)
        #expect(scrape.value(calls + #"{endpoint="production",status="21007"}"#) == 1)
        #expect(scrape.value(calls + #"{endpoint="production",status="0"}"#) == 4)
        #expect(scrape.value(#"receipt_worker_queue_jobs{state="verified"}"#) == 4)
        #expect(scrape.value(#"receipt_worker_queue_jobs{state="rejected"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_queue_jobs{state="queued"}"#) == 0)
        #expect(scrape.value(#"receipt_worker_queue_oldest_age_seconds{state="verified"}"#).map { $0 > 0 } == true)
        #expect(scrape.value("receipt_worker_lease_lost_total") == 0)
        #expect(scrape.value("receipt_worker_apple_requests_in_flight") == 0)
        #expect(scrape.value("receipt_worker_circuit_breaker_state") == 0)
        #expect(scrape.value("receipt_worker_ready") == 1)
        #expect(scrape.value("receipt_worker_queue_poll_failures_total") == 0)

        // The version `receipt-worker --version` prints, as the build info's label.
        let versionRun = try ChildProcess(["--version"], environment: ChildProcess.environment())
        #expect(versionRun.wait(timeout: 30) == 0)
        let version = versionRun.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.wholeMatch(of: /\d+\.\d+\.\d+/) != nil, "\(version)")
        #expect(scrape.value(#"receipt_worker_build_info{version="\#(version)"}"#) == 1, "\(scrape.text)")
        #expect(scrape.value("receipt_worker_notifications_waiting") == 0)

        // Notifications received after the worker started are counted by source; one held back for an hour waits.
        _ = try h.scalar("SELECT receive_notification($1)", [NotificationReceiverTests.algNone(signature: "c2lnMg")])
        // In one transaction, so no worker claims it before it is held back.
        try h.db.withTransaction {
            let held = try h.db.query(
                "SELECT receive_notification($1) AS id", [NotificationReceiverTests.algNone(signature: "c2lnMw")]
            )[0, "id"]
            _ = try h.db.query(
                "UPDATE receipt_notifications SET state = 'retry', run_at = now() + interval '1 hour', "
                    + "received_at = now() - interval '90 seconds' WHERE id = $1",
                [held]
            )
        }
        _ = try waitUntil(30) {
            scrape = Scrape(text: try LoopbackHTTPClient.get("/metrics", port: port).text)
            return scrape.value(#"receipt_worker_notifications_received_total{source="sql"}"#) == 2
                && scrape.value("receipt_worker_notifications_waiting") == 1
        }
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="sql"}"#) == 2, "\(scrape.text)")
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="receiver"}"#) == 0)
        #expect(scrape.value("receipt_worker_notifications_waiting") == 1)
        #expect(scrape.value("receipt_worker_notifications_oldest_waiting_age_seconds").map { $0 >= 90 } == true)

        let ready = try LoopbackHTTPClient.get("/readyz", port: port)
        #expect(ready.status == 200, "\(ready.text)")
        #expect(try LoopbackHTTPClient.get("/healthz", port: port).status == 200)

        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 30) == 0, "\(worker.output)")
        #expect(throws: (any Error).self, "the port is closed after the worker stops") {
            try LoopbackHTTPClient.get("/healthz", port: port)
        }
    }

    @Test("/readyz is 503 and says to migrate once a migration of this build is missing; /healthz stays 200")
    func notReadyWithoutMigrations() throws {
        // `work` does not start on a database without its migrations (exit 3, StartupTests): here one goes missing
        // under a running worker, as when a newer build's sql/ is deployed beside it before `migrate`.
        let h = try Harness()
        let port = try freePort()
        let worker = try startWorker(h, metricsPort: port)
        defer { worker.signal(SIGTERM) }
        try #require(worker.waitForLine(containing: "worker started", timeout: 30) != nil, "\(worker.output)")
        let last = try #require(try Migrator(directory: TestServer.sqlDirectory).migrations.last).name
        _ = try h.db.query("DELETE FROM receipt_schema_migrations WHERE version = $1", [last])

        var answer: LoopbackHTTPClient.Response?
        _ = try waitUntil(20) {
            answer = try? LoopbackHTTPClient.get("/readyz", port: port)
            return answer?.status == 503
        }
        let body = answer?.text ?? ""
        #expect(answer?.status == 503)
        #expect(body.hasPrefix("not ready: migrations not applied: \(last)"), "\(body)")
        #expect(body.contains("receipt-worker migrate"))
        #expect(!body.dropLast().contains("\n"), "one line: \(body)")
        #expect(try LoopbackHTTPClient.get("/healthz", port: port).status == 200)

        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 30) == 0, "\(worker.output)")
    }

    @Test("an impossible METRICS_PORT is a configuration error (exit 2) that names it")
    func badPort() throws {
        let child = try ChildProcess(
            ["work", "--metrics-port", "70000"],
            environment: ChildProcess.environment(setting: [
                "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
                "APPLE_BUNDLE_IDS": "com.example.app",
            ])
        )
        #expect(child.wait(timeout: 30) == 2)
        #expect(child.output.contains("METRICS_PORT"), "\(child.output)")
    }

    /// How the App Store fails in `transportFailures`, and the cause `retries_total` must count it under.
    enum BrokenApple: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case nothingListens = "nothing listens on the port"
        case closedOnAccept = "the connection is closed without an answer"
        case silent = "the request is never answered"

        var cause: String { self == .silent ? "timeout" : "connection" }
        var testDescription: String { rawValue }
    }

    @Test(
        "transport failures of a real worker's Apple calls: retries_total{cause} on its /metrics, then the dead letter",
        arguments: BrokenApple.allCases
    )
    func transportFailures(_ broken: BrokenApple) throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("tf-1")]), order: "transport-1")
        let listener: BrokenAppleListener? = switch broken {
        case .nothingListens: nil
        case .closedOnAccept: try BrokenAppleListener(.closeOnAccept)
        case .silent: try BrokenAppleListener(.silent)
        }
        defer { listener?.stop() }
        let appleURL = try listener?.url ?? "http://127.0.0.1:\(freePort())/verifyReceipt"
        let port = try freePort()
        // Three attempts: two written as retries, the third as the dead letter.
        let worker = try startWorker(h, metricsPort: port, [
            "APPLE_PRODUCTION_URL": appleURL, "APPLE_TIMEOUT_SECONDS": "1",
            "MAX_ATTEMPTS": "3", "RETRY_BASE_SECONDS": "0.05", "RETRY_MAX_SECONDS": "0.1",
        ])
        defer { worker.signal(SIGTERM) }

        try #require(
            try waitUntil(90) { try h.job(id)["state"] == "dead" }, "\((try? h.job(id)) ?? [:])\n\(worker.output)"
        )
        let job = try h.job(id)
        #expect(job["attempts"] == "3")
        #expect(job["reason"] == "retries_exhausted")
        // The dead letter is recorded just after it is written.
        let dead = #"receipt_worker_jobs_finished_total{state="dead",reason="retries_exhausted"}"#
        var scrape = Scrape(text: "")
        _ = try waitUntil(30) {
            scrape = Scrape(text: try LoopbackHTTPClient.get("/metrics", port: port).text)
            return scrape.value(dead) == 1
        }
        #expect(scrape.value(dead) == 1)
        #expect(scrape.value(#"receipt_worker_retries_total{cause="\#(broken.cause)"}"#) == 2, "\(scrape.text)")
        for other in ["timeout", "connection", "http_status"] where other != broken.cause {
            #expect(scrape.value(#"receipt_worker_retries_total{cause="\#(other)"}"#) == 0)
        }
        let calls = #"receipt_worker_apple_request_duration_seconds_count{endpoint="production",status="\#(broken.cause)"}"#
        #expect(scrape.value(calls) == 3, "\(scrape.text)")
        if broken == .closedOnAccept {
            #expect(listener?.acceptedConnections == 3)
        }

        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 30) == 0, "\(worker.output)")
    }

    @Test("the outcome decider gives each App Store client failure one retry cause label")
    func retryCauses() throws {
        let h = try Harness()
        let decider = OutcomeDecider(rules: RulesConfiguration(bundleIds: ["com.example.app"]), retry: RetryPolicy())
        let job = ClaimedJob(
            id: 1, leaseToken: "6f1c1a2e-8a0b-4d3e-9f55-2b7c0d9e4a11",
            order: OrderContext(
                jobId: 1, orderId: "o-1", userId: "u-1", productId: "pro.monthly", clientTransactionId: nil,
                bundleId: "com.example.app", orderCreatedAtMs: nil, jobCreatedAtMs: Harness.now, attempt: 1
            ),
            receiptData: "TUlJ", receiptHash: "abc"
        )
        func result(_ step: AppStoreClient.Step) throws -> AppStoreResult {
            guard case .done(let result) = step else { throw TestSetupError("a redirect, not a result") }
            return result
        }
        func http(_ status: Int, _ body: String) throws -> AppStoreResult {
            try result(AppStoreClient.interpret(
                httpStatus: status, retryAfter: nil, body: Array(body.utf8), endpoint: .production
            ))
        }
        func transport(_ kind: HTTPError.Kind, _ code: Int32) throws -> AppStoreResult {
            try result(AppStoreClient.interpret(
                .failure(HTTPError(kind: kind, curlCode: code, message: "detail")), endpoint: .sandbox
            ))
        }
        let emptyReceipt = #"{"status":0,"receipt":{"bundle_id":"com.example.app","in_app":[]}}"#
        let cases: [(AppStoreResult, String)] = [
            (try transport(.timeout, 28), "timeout"),
            (try transport(.connectFailed, 7), "connection"),
            (try transport(.connectionReset, 56), "connection"),
            (try transport(.tls, 60), "connection"),
            (try http(503, "<html>Service Unavailable</html>"), "http_status"),
            (try http(429, ""), "http_status"),
            (try http(200, "<html>proxy</html>"), "unreadable_body"),
            (try http(200, #"{"status":0}"#), "unreadable_body"),
            (try http(200, #"{"status":21005}"#), "apple_status"),
            (try http(200, #"{"status":21199}"#), "apple_status"),
            (try http(200, #"{"status":21002}"#), "malformed_data"),
            (try h.verify(Harness.redirectLoopReceipt("loop-1")).result, "redirect_loop"),
            (try http(200, emptyReceipt), "no_purchases"),
        ]
        for (result, cause) in cases {
            let outcome = decider.outcome(for: job, result: result, random: 0.5)
            #expect(outcome.kind == .retry, "\(result)")
            #expect(outcome.retryCause == cause, "\(result): \(outcome.error ?? "")")
        }

        let throttled = decider.outcome(for: job, result: .retryable(AppStoreFailure(
            cause: .rateLimited, message: "HTTP 429", endpoint: .production, appleStatus: 4290000, httpStatus: 429
        )), random: 0.5)
        #expect(throttled.retryCause == "rate_limited")
        let ocsp = decider.outcome(
            for: job, signed: .failure(SignedDataError(.revocationUnavailable, "OCSP responder unreachable")), random: 0.5
        )
        #expect(ocsp.kind == .retry)
        #expect(ocsp.retryCause == "revocation_check")

        let secret = decider.outcome(for: job, result: try http(200, #"{"status":21004}"#), random: 0.5)
        #expect(secret.kind == .configError)
        #expect(secret.configurationErrorLabel == "21004")
        let wrongURL = decider.outcome(for: job, result: try http(404, "Not Found"), random: 0.5)
        #expect(wrongURL.kind == .configError)
        #expect(wrongURL.configurationErrorLabel == "http_404")
    }

    @Test("scripts/check-deploy.sh: deploy/ agrees with the built binary, the sources and the metrics")
    func deployIsConsistent() throws {
        let (status, output) = try runCheckDeploy(root: TestServer.repositoryRoot.path)
        let problems = output.split(separator: "\n").filter { $0.hasPrefix("  - ") }
        let grants = problems.filter { $0.contains("deploy/sql/roles.sql") }
        #expect(problems.count == grants.count, "\(output)")
        #expect(status == 0 || !problems.isEmpty, "\(output)")
        #expect(grants.isEmpty, "\(grants.joined(separator: "\n"))")
    }

    @Test("scripts/check-deploy.sh names each disagreement and exits non-zero")
    func deployDisagreements() throws {
        let repository = TestServer.repositoryRoot
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("check-deploy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: repository.appendingPathComponent("deploy"), to: root.appendingPathComponent("deploy")
        )
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("Sources"), withDestinationURL: repository.appendingPathComponent("Sources")
        )
        func append(_ path: String, _ text: String) throws {
            let handle = try FileHandle(forWritingTo: root.appendingPathComponent(path))
            defer { try? handle.close() }
            handle.seekToEndOfFile()
            handle.write(Data(text.utf8))
        }
        try append(
            "deploy/systemd/receipt-worker-sweep.service",
            "ExecStartPost=/usr/local/bin/receipt-worker sweep --no-such-flag\n"
        )
        try append("deploy/env.example", "#NOT_READ_ANYWHERE=1\n")
        try append("deploy/prometheus/alerts.yaml", "# expr: receipt_worker_imaginary_total > 0\n")
        let (status, output) = try runCheckDeploy(root: root.path)
        #expect(status == 1, "\(output)")
        #expect(output.contains("receipt-worker sweep --no-such-flag"), "\(output)")
        #expect(output.contains("NOT_READ_ANYWHERE is not read by the code"), "\(output)")
        #expect(output.contains("metric receipt_worker_imaginary_total is not registered"), "\(output)")
    }

    // MARK: Helpers

    /// Runs `receipt-worker work` against the harness's fake App Store with the metrics port on.
    private func startWorker(
        _ h: Harness, metricsPort: Int, databaseURL: String? = nil, _ extra: [String: String] = [:]
    ) throws -> ChildProcess {
        var setting = [
            "DATABASE_URL": databaseURL ?? h.databaseURL,
            "APPLE_SHARED_SECRET": Harness.secret,
            "APPLE_BUNDLE_IDS": TestServer.bundleIds.joined(separator: ","),
            "APPLE_PRODUCTION_URL": h.fake.productionURL,
            "APPLE_SANDBOX_URL": h.fake.sandboxURL,
            "POLL_INTERVAL_SECONDS": "0.05",
            "SHUTDOWN_GRACE_SECONDS": "2",
            "METRICS_HOST": "127.0.0.1",
            "RECEIPT_WORKER_SQL_DIR": TestServer.sqlDirectory,
        ]
        setting.merge(extra) { $1 }
        return try ChildProcess(
            ["work", "--metrics-port", String(metricsPort)],
            environment: ChildProcess.environment(removing: ["METRICS_PORT", "METRICS_HOST", "LOG_FORMAT"], setting: setting)
        )
    }

    private func runCheckDeploy(root: String) throws -> (Int32, String) {
        let output = FileManager.default.temporaryDirectory
            .appendingPathComponent("check-deploy-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            TestServer.repositoryRoot.appendingPathComponent("scripts/check-deploy.sh").path, "--root", root,
            try ChildProcess.executable(),
        ]
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    private func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try condition()
    }
}

/// Prometheus text format, read for assertions.
private struct Scrape {
    let text: String

    /// The value of a series written as it appears: `name{label="value",…}` or a bare `name`.
    func value(_ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}
#endif
