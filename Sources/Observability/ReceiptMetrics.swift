import Metrics
import Workers

import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The service's metrics (names in ``MetricName``), recorded through swift-metrics into one Prometheus registry,
/// which ``MetricsServer`` serves on GET /metrics.
///
/// The factory is passed to each metric rather than bootstrapped globally, so tests can make as many instances as
/// they like; the executable may still bootstrap `MetricsSystem` with ``factory`` so libraries' metrics land in the
/// same registry. Recording methods are cheap and thread-safe: the worker's loops call them directly.
public final class ReceiptMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory

    /// Buckets of the Apple call histogram, in seconds: Apple takes 3–6 s on a normal day, so they are finest there,
    /// and they reach 30 s, past any sensible APPLE_TIMEOUT_SECONDS.
    public static let appleRequestBuckets: [Duration] = [
        0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30,
    ].map { Duration.milliseconds(Int64($0 * 1000)) }

    private let finished: MetricFamily<Counter>
    private let leaseLost: Counter
    private let retries: MetricFamily<Counter>
    private let appleRequests: MetricFamily<Timer>
    private let inFlight: Gauge
    private let queueJobs: MetricFamily<Gauge>
    private let queueOldestAge: MetricFamily<Gauge>
    private let queuePollFailures: Counter
    private let rescued: Counter
    private let deadLetters: MetricFamily<Counter>
    private let credits: MetricFamily<Counter>
    private let configurationErrors: MetricFamily<Counter>
    private let breaker: Gauge
    private let ready: Gauge
    private let notifications: MetricFamily<Counter>
    private let notificationsReceived: MetricFamily<Counter>
    private let notificationsWaiting: Gauge
    private let notificationsOldestWaitingAge: Gauge
    private let retentionOldestDeletableAge: MetricFamily<Gauge>
    private let retentionPeriod: MetricFamily<Gauge>

    /// - Parameter version: receipt-worker's version, for `receipt_worker_build_info{version}`.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), version: String = "unknown") {
        var configured = PrometheusMetricsFactory(registry: registry)
        configured.durationHistogramBuckets[MetricName.appleRequestDuration] = Self.appleRequestBuckets
        let factory = configured
        self.registry = registry
        self.factory = factory

        func counters(_ name: String, _ labels: String...) -> MetricFamily<Counter> {
            MetricFamily(labels: labels) { Counter(label: name, dimensions: $0, factory: factory) }
        }
        func gauges(_ name: String, _ labels: String...) -> MetricFamily<Gauge> {
            MetricFamily(labels: labels) { Gauge(label: name, dimensions: $0, factory: factory) }
        }
        finished = counters(MetricName.jobsFinished, "state", "reason")
        leaseLost = Counter(label: MetricName.leaseLost, factory: factory)
        retries = counters(MetricName.retries, "cause")
        appleRequests = MetricFamily(labels: ["endpoint", "status"]) {
            Timer(label: MetricName.appleRequestDuration, dimensions: $0, factory: factory)
        }
        inFlight = Gauge(label: MetricName.appleRequestsInFlight, factory: factory)
        queueJobs = gauges(MetricName.queueJobs, "state")
        queueOldestAge = gauges(MetricName.queueOldestAge, "state")
        queuePollFailures = Counter(label: MetricName.queuePollFailures, factory: factory)
        rescued = Counter(label: MetricName.leasesRescued, factory: factory)
        deadLetters = counters(MetricName.deadLetters, "via")
        credits = counters(MetricName.ledgerCredits, "environment")
        configurationErrors = counters(MetricName.configurationErrors, "apple_status")
        breaker = Gauge(label: MetricName.circuitBreakerState, factory: factory)
        ready = Gauge(label: MetricName.ready, factory: factory)
        notifications = counters(MetricName.notifications, "state", "reason")
        notificationsReceived = counters(MetricName.notificationsReceived, "source")
        notificationsWaiting = Gauge(label: MetricName.notificationsWaiting, factory: factory)
        notificationsOldestWaitingAge = Gauge(label: MetricName.notificationsOldestWaitingAge, factory: factory)
        retentionOldestDeletableAge = gauges(MetricName.retentionOldestDeletableAge, "kind")
        retentionPeriod = gauges(MetricName.retentionPeriod, "kind")
        Gauge(label: MetricName.buildInfo, dimensions: [("version", version)], factory: factory).record(1)
        registerZeroSeries()
    }

    /// Series that alerts and `increase()` rely on exist from the first scrape, at 0, instead of appearing with
    /// their first event (which `increase()` would not count).
    private func registerZeroSeries() {
        finished("verified", "none").increment(by: 0)
        finished("dead", "retries_exhausted").increment(by: 0)
        for via in DeadLetterPath.allCases { deadLetters(via.rawValue).increment(by: 0) }
        for environment in ["Production", "Sandbox"] { credits(environment).increment(by: 0) }
        for status in ["21000", "21004"] { configurationErrors(status).increment(by: 0) }
        for cause in ["timeout", "connection", "http_status"] { retries(cause).increment(by: 0) }
        notifications("applied", "none").increment(by: 0)
        notifications("rejected", "invalid_signature").increment(by: 0)
        notifications("dead", "retries_exhausted").increment(by: 0)
        for source in NotificationSample.sources { notificationsReceived(source).increment(by: 0) }
        notificationsWaiting.record(0)
        notificationsOldestWaitingAge.record(0)
        inFlight.record(0)
        breaker.record(CircuitBreakerGauge.closed.rawValue)
        ready.record(0)
    }

    // MARK: Recording

    /// One job outcome written by a worker (the `jobWritten` event).
    public func recordWritten(_ written: WrittenOutcome) {
        switch written.state {
        case "lost":
            leaseLost.increment()
        case "verified":
            finished("verified", "none").increment()
            credits(written.environment ?? "unknown").increment()
        case "dead":
            finished("dead", written.reason ?? "retries_exhausted").increment()
            deadLetters(DeadLetterPath.worker.rawValue).increment()
        case "retry" where written.kind == "config_error":
            configurationErrors(written.appleStatus ?? "unknown").increment()
        case "retry":
            retries(written.retryCause ?? "other").increment()
        default:
            finished(written.state, written.reason ?? "unknown").increment()
        }
    }

    /// One scheduler pass (the `swept` event): rescued leases, and jobs out of attempts moved to dead.
    public func recordSweep(rescued rescuedCount: Int, dead: Int) {
        if rescuedCount > 0 { rescued.increment(by: rescuedCount) }
        if dead > 0 {
            deadLetters(DeadLetterPath.scheduler.rawValue).increment(by: dead)
            finished("dead", "retries_exhausted").increment(by: dead)
        }
    }

    /// One App Store Server Notification written back (the `notificationWritten` event). `state` and `reason` come
    /// from bounded sets (see ``MetricName/notifications``).
    public func recordNotification(state: String, reason: String?) {
        notifications(state, reason ?? "none").increment()
    }

    /// One HTTP call to Apple (the `appleCall` event). `status` must come from a bounded set (see
    /// `AppStoreCall.metricStatus`).
    public func recordAppleCall(endpoint: String, status: String, seconds: Double) {
        appleRequests(endpoint, status).recordSeconds(max(0, seconds))
    }

    public func setAppleRequestsInFlight(_ count: Int) {
        inFlight.record(count)
    }

    /// The queue as `receipt_queue_summary` reports it. States missing from `samples` keep their last values.
    public func setQueue(_ samples: [QueueSample]) {
        for sample in samples {
            queueJobs(sample.state).record(sample.jobs)
            queueOldestAge(sample.state).record(sample.oldestAgeSeconds)
        }
    }

    /// What the database says of notifications: those received since the last sample, by source, and those waiting.
    public func setNotifications(_ sample: NotificationSample) {
        for (source, count) in sample.received where count > 0 {
            notificationsReceived(source).increment(by: count)
        }
        notificationsWaiting.record(sample.waiting)
        notificationsOldestWaitingAge.record(sample.oldestWaitingAgeSeconds)
    }

    /// What a retention pass left behind, per kind whose retention is set (other kinds have no series).
    public func setRetention(_ samples: [RetentionBacklog]) {
        for sample in samples {
            retentionOldestDeletableAge(sample.kind).record(sample.oldestDeletableAgeSeconds)
            retentionPeriod(sample.kind).record(sample.periodSeconds)
        }
    }

    /// A queue summary read failed.
    public func recordQueuePollFailure() {
        queuePollFailures.increment()
    }

    public func setCircuitBreaker(_ state: CircuitBreakerGauge) {
        breaker.record(state.rawValue)
    }

    public func setReady(_ isReady: Bool) {
        ready.record(isReady ? 1 : 0)
    }

    /// The registry in Prometheus text format (what GET /metrics serves).
    public func exposition() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
