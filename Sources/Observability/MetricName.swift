/// The names of every metric this service exports, each with the `receipt_worker_` prefix. The Grafana dashboard,
/// the alerting rules and `scripts/check-deploy.sh` use exactly these names, so each is written out in full (a text
/// search must find it).
public enum MetricName {
    public static let prefix = "receipt_worker_"

    /// Counter {state, reason}: verdicts written (verified, rejected, dead) and jobs the scheduler moved to dead.
    public static let jobsFinished = "receipt_worker_jobs_finished_total"
    /// Counter: outcomes discarded because the job's lease was no longer this worker's.
    public static let leaseLost = "receipt_worker_lease_lost_total"
    /// Counter {cause}: attempts that gave no verdict and cost an attempt.
    public static let retries = "receipt_worker_retries_total"
    /// Histogram {endpoint, status}: one HTTP call to verifyReceipt, in seconds.
    public static let appleRequestDuration = "receipt_worker_apple_request_duration_seconds"
    /// Gauge: HTTP calls to Apple in flight in this process.
    public static let appleRequestsInFlight = "receipt_worker_apple_requests_in_flight"
    /// Gauge {state}: jobs per state (the whole queue, as `receipt_queue_summary` reports it).
    public static let queueJobs = "receipt_worker_queue_jobs"
    /// Gauge {state}: age of the oldest job per state, from its created_at, in seconds (0 when there is none).
    public static let queueOldestAge = "receipt_worker_queue_oldest_age_seconds"
    /// Counter: running jobs whose lease expired, given back to the queue by this process's scheduler.
    public static let leasesRescued = "receipt_worker_leases_rescued_total"
    /// Counter {via}: jobs out of attempts, moved to the dead letters by a worker's write or by the scheduler.
    public static let deadLetters = "receipt_worker_dead_letters_total"
    /// Counter {environment}: purchases credited in the ledger (environment as in receipt_transactions).
    public static let ledgerCredits = "receipt_worker_ledger_credits_total"
    /// Counter {apple_status}: answers that say our configuration is wrong (21004, 21000, an HTTP 4xx).
    public static let configurationErrors = "receipt_worker_configuration_errors_total"
    /// Gauge: the circuit breaker in front of Apple: 0 closed, 1 recovering, 2 open.
    public static let circuitBreakerState = "receipt_worker_circuit_breaker_state"
    /// Gauge: 1 when the last readiness check passed (database answers, migrations current), else 0.
    public static let ready = "receipt_worker_ready"
    /// Counter: queue summary reads that failed (the queue gauges then keep their last values).
    public static let queuePollFailures = "receipt_worker_queue_poll_failures_total"

    /// Counter {state, reason}: App Store Server Notifications written back by this process's workers: applied,
    /// duplicate, rejected (with its reason: invalid_signature, bundle_mismatch, app_mismatch, sandbox_not_allowed),
    /// retry (also while the app's Apple id is not configured), dead (retries_exhausted); reason "none" when there
    /// is none.
    public static let notifications = "receipt_worker_notifications_total"
    /// Counter {source}: App Store Server Notifications the database received since this process started, by who
    /// handed them over (receiver, history, sql), counted from new rows of receipt_notifications every 5 s. Every
    /// process with a metrics port counts all of them: aggregate with max, not sum.
    public static let notificationsReceived = "receipt_worker_notifications_received_total"
    /// Gauge: notifications not finished yet (queued, waiting for a retry, or running), from the database.
    public static let notificationsWaiting = "receipt_worker_notifications_waiting"
    /// Gauge: seconds since the oldest of those was received (0 when none waits).
    public static let notificationsOldestWaitingAge = "receipt_worker_notifications_oldest_waiting_age_seconds"
    /// Gauge {kind}: after each retention pass of `work`'s maintenance loop, seconds since the oldest row that
    /// retention may delete (older than its period) but has not was finished, made or last changed (the column that
    /// ages it, as in receipt_retention); 0 when there is none. Only kinds whose retention is set have a series.
    public static let retentionOldestDeletableAge = "receipt_worker_retention_oldest_deletable_age_seconds"
    /// Gauge {kind}: the retention period in effect for each kind that has one, in seconds (as receipt_prune applies
    /// it: 180 days at least for notifications, refund requests and consumption records).
    public static let retentionPeriod = "receipt_worker_retention_period_seconds"
    /// Gauge {version}: 1, labelled with receipt-worker's version.
    public static let buildInfo = "receipt_worker_build_info"

    /// Every name, for tests and `scripts/check-deploy.sh`.
    public static let all = [
        jobsFinished, leaseLost, retries, appleRequestDuration, appleRequestsInFlight, queueJobs, queueOldestAge,
        leasesRescued, deadLetters, ledgerCredits, configurationErrors, circuitBreakerState, ready, queuePollFailures,
        notifications, notificationsReceived, notificationsWaiting, notificationsOldestWaitingAge, buildInfo,
        retentionOldestDeletableAge, retentionPeriod,
    ]
}
