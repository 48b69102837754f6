import Observability
import Testing
import Workers

@Suite("ReceiptMetrics: what each worker event counts")
struct ReceiptMetricsTests {
    let metrics = ReceiptMetrics()
    var scrape: Exposition { Exposition(text: metrics.exposition()) }

    @Test("every metric family is registered at start, with the type its name promises")
    func registeredAtStart() {
        metrics.recordAppleCall(endpoint: "production", status: "0", seconds: 1)
        metrics.setQueue([QueueSample(state: "queued", jobs: 0, oldestAgeSeconds: 0)])
        metrics.recordQueuePollFailure()
        // The retention gauges have series only for kinds whose retention is set, from the first pass on.
        metrics.setRetention([RetentionBacklog(kind: "events", periodSeconds: 86_400, oldestDeletableAgeSeconds: 0)])
        let scrape = self.scrape
        for name in MetricName.all {
            let histogram = name.hasSuffix("_seconds") && name.contains("duration")
            let expected = name.hasSuffix("_total") ? "counter" : histogram ? "histogram" : "gauge"
            #expect(scrape.type(of: name) == expected, "\(name)")
        }
        // Zero series exist before any event, so increase() and alerts see the first one.
        #expect(scrape.value(#"receipt_worker_dead_letters_total{via="scheduler"}"#) == 0)
        #expect(scrape.value(#"receipt_worker_configuration_errors_total{apple_status="21004"}"#) == 0)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Sandbox"}"#) == 0)
        #expect(scrape.value("receipt_worker_circuit_breaker_state") == 0)
    }

    @Test("notifications: received ones add up by source across samples; waiting and the oldest age are as sampled")
    func notificationSamples() {
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="receiver"}"#) == 0)
        metrics.setNotifications(NotificationSample(received: ["receiver": 3, "sql": 1], waiting: 4, oldestWaitingAgeSeconds: 12))
        metrics.setNotifications(NotificationSample(received: ["receiver": 2], waiting: 1, oldestWaitingAgeSeconds: 3))
        let scrape = self.scrape
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="receiver"}"#) == 5)
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="sql"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_notifications_received_total{source="history"}"#) == 0)
        #expect(scrape.value("receipt_worker_notifications_waiting") == 1)
        #expect(scrape.value("receipt_worker_notifications_oldest_waiting_age_seconds") == 3)
    }

    @Test("build info: one series, 1, labelled with the version")
    func buildInfo() {
        let scrape = Exposition(text: ReceiptMetrics(version: "1.2.3").exposition())
        #expect(scrape.value(#"receipt_worker_build_info{version="1.2.3"}"#) == 1)
        #expect(scrape.lines(of: "receipt_worker_build_info").count == 1)
    }

    @Test("verified: a verdict and a ledger credit in the purchase's environment")
    func verified() {
        metrics.recordWritten(WrittenOutcome(state: "verified", kind: "verified", environment: "Sandbox"))
        metrics.recordWritten(WrittenOutcome(state: "verified", kind: "verified", environment: "Production"))
        metrics.recordWritten(WrittenOutcome(state: "verified", kind: "verified", environment: "Production"))
        #expect(scrape.value(#"receipt_worker_jobs_finished_total{state="verified",reason="none"}"#) == 3)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Production"}"#) == 2)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Sandbox"}"#) == 1)
    }

    @Test("a verified outcome the ledger turned into already_credited is a rejection, not a credit")
    func verifiedButAlreadyCredited() {
        metrics.recordWritten(
            WrittenOutcome(state: "rejected", reason: "already_credited", kind: "verified", environment: "Production")
        )
        #expect(scrape.value(#"receipt_worker_jobs_finished_total{state="rejected",reason="already_credited"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Production"}"#) == 0)
    }

    @Test("retry by cause; a configuration error is not a retry; lost leases; dead letters from both paths")
    func retriesAndFailures() {
        metrics.recordWritten(WrittenOutcome(state: "retry", kind: "retry", retryCause: "timeout"))
        metrics.recordWritten(WrittenOutcome(state: "retry", kind: "retry", retryCause: "timeout"))
        metrics.recordWritten(WrittenOutcome(state: "retry", kind: "retry", retryCause: "no_purchases"))
        metrics.recordWritten(WrittenOutcome(state: "retry", kind: "config_error", appleStatus: "21004"))
        metrics.recordWritten(WrittenOutcome(state: "lost", kind: "verified", environment: "Production"))
        metrics.recordWritten(WrittenOutcome(state: "dead", reason: "retries_exhausted", kind: "retry"))
        metrics.recordSweep(rescued: 3, dead: 2)
        let scrape = self.scrape
        #expect(scrape.value(#"receipt_worker_retries_total{cause="timeout"}"#) == 2)
        #expect(scrape.value(#"receipt_worker_retries_total{cause="no_purchases"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_configuration_errors_total{apple_status="21004"}"#) == 1)
        #expect(scrape.lines(of: "receipt_worker_retries_total").allSatisfy { !$0.contains("config") })
        #expect(scrape.value("receipt_worker_lease_lost_total") == 1)
        #expect(scrape.value(#"receipt_worker_ledger_credits_total{environment="Production"}"#) == 0)
        #expect(scrape.value(#"receipt_worker_dead_letters_total{via="worker"}"#) == 1)
        #expect(scrape.value(#"receipt_worker_dead_letters_total{via="scheduler"}"#) == 2)
        #expect(scrape.value(#"receipt_worker_jobs_finished_total{state="dead",reason="retries_exhausted"}"#) == 3)
        #expect(scrape.value("receipt_worker_leases_rescued_total") == 3)
    }

    @Test("Apple calls: a histogram per endpoint and status, with buckets up to 30 s")
    func appleCalls() {
        metrics.recordAppleCall(endpoint: "production", status: "21007", seconds: 0.2)
        metrics.recordAppleCall(endpoint: "sandbox", status: "0", seconds: 4.5)
        metrics.recordAppleCall(endpoint: "production", status: "timeout", seconds: 40)
        let scrape = self.scrape
        let sandbox = #"receipt_worker_apple_request_duration_seconds_count{endpoint="sandbox",status="0"}"#
        #expect(scrape.value(sandbox) == 1)
        let sum = scrape.value(#"receipt_worker_apple_request_duration_seconds_sum{endpoint="sandbox",status="0"}"#)
        #expect(abs((sum ?? 0) - 4.5) < 0.001)
        let buckets = scrape.lines(of: "receipt_worker_apple_request_duration_seconds_bucket")
            .filter { $0.contains(#"endpoint="sandbox""#) }
        #expect(buckets.count == ReceiptMetrics.appleRequestBuckets.count + 1)  // and +Inf
        // 4.5 s is above the 4 s bucket and within the 5 s one.
        #expect(buckets.contains { $0.contains(#"le="4"#) && $0.hasSuffix(" 0") })
        #expect(buckets.contains { $0.contains(#"le="5"#) && $0.hasSuffix(" 1") })
        #expect(buckets.contains { $0.contains(#"le="30"#) })
        // A call slower than every bucket is counted only in +Inf.
        let timeouts = scrape.lines(of: "receipt_worker_apple_request_duration_seconds_bucket")
            .filter { $0.contains(#"status="timeout""#) }
        #expect(timeouts.filter { $0.hasSuffix(" 1") }.count == 1)
        #expect(timeouts.contains { $0.contains(#"le="+Inf""#) && $0.hasSuffix(" 1") })
    }

    @Test("gauges: queue per state, in flight, breaker, ready")
    func gauges() {
        metrics.setQueue([
            QueueSample(state: "queued", jobs: 12, oldestAgeSeconds: 301.5),
            QueueSample(state: "retry", jobs: 4, oldestAgeSeconds: 7200),
        ])
        metrics.setQueue([QueueSample(state: "queued", jobs: 3, oldestAgeSeconds: 2)])
        metrics.setAppleRequestsInFlight(17)
        metrics.setCircuitBreaker(.open)
        metrics.setReady(true)
        let scrape = self.scrape
        #expect(scrape.value(#"receipt_worker_queue_jobs{state="queued"}"#) == 3)
        #expect(scrape.value(#"receipt_worker_queue_oldest_age_seconds{state="queued"}"#) == 2)
        #expect(scrape.value(#"receipt_worker_queue_jobs{state="retry"}"#) == 4)
        #expect(scrape.value(#"receipt_worker_queue_oldest_age_seconds{state="retry"}"#) == 7200)
        #expect(scrape.value("receipt_worker_apple_requests_in_flight") == 17)
        #expect(scrape.value("receipt_worker_circuit_breaker_state") == 2)
        #expect(scrape.value("receipt_worker_ready") == 1)
        #expect(CircuitBreakerGauge(name: "recovering") == .recovering)
        #expect(CircuitBreakerGauge(name: "half-open") == nil)
    }

    @Test("a label with unbounded values folds into \"other\" past the series cap")
    func cardinalityCap() {
        for index in 0..<500 {
            metrics.recordWritten(WrittenOutcome(state: "retry", kind: "retry", retryCause: "cause-\(index)"))
        }
        let lines = scrape.lines(of: "receipt_worker_retries_total")
        #expect(lines.count <= 201)
        let other = scrape.value(#"receipt_worker_retries_total{cause="other"}"#) ?? 0
        #expect(other >= 300)
    }
}
