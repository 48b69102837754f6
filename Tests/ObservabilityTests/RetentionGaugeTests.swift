import Observability
import Testing
import Workers

@Suite("ReceiptMetrics: the retention gauges")
struct RetentionGaugeTests {
    let metrics = ReceiptMetrics()
    var scrape: Exposition { Exposition(text: metrics.exposition()) }

    @Test("per kind as sampled, the latest pass winning; kinds never sampled have no series")
    func perKind() {
        #expect(scrape.type(of: MetricName.retentionOldestDeletableAge) == nil)
        metrics.setRetention([
            RetentionBacklog(kind: "events", periodSeconds: 2_592_000, oldestDeletableAgeSeconds: 3_456_000),
            RetentionBacklog(kind: "forgeries", periodSeconds: 604_800, oldestDeletableAgeSeconds: 0),
        ])
        metrics.setRetention([
            RetentionBacklog(kind: "events", periodSeconds: 2_592_000, oldestDeletableAgeSeconds: 0),
            RetentionBacklog(kind: "forgeries", periodSeconds: 604_800, oldestDeletableAgeSeconds: 700_000),
        ])
        let scrape = self.scrape
        #expect(scrape.value(#"receipt_worker_retention_oldest_deletable_age_seconds{kind="events"}"#) == 0)
        #expect(scrape.value(#"receipt_worker_retention_oldest_deletable_age_seconds{kind="forgeries"}"#) == 700_000)
        #expect(scrape.value(#"receipt_worker_retention_period_seconds{kind="events"}"#) == 2_592_000)
        #expect(scrape.value(#"receipt_worker_retention_period_seconds{kind="forgeries"}"#) == 604_800)
        #expect(scrape.value(#"receipt_worker_retention_oldest_deletable_age_seconds{kind="jobs"}"#) == nil)
    }

    @Test("a worker's retentionSampled event sets the gauges")
    func fromTheWorkerEvent() {
        WorkerEvents.recording(into: metrics).retentionSampled([
            RetentionBacklog(kind: "jobs", periodSeconds: 864_000, oldestDeletableAgeSeconds: 1_000_000),
        ])
        #expect(scrape.value(#"receipt_worker_retention_oldest_deletable_age_seconds{kind="jobs"}"#) == 1_000_000)
        #expect(scrape.value(#"receipt_worker_retention_period_seconds{kind="jobs"}"#) == 864_000)
    }

    @Test("the period per kind is receipt_prune's: the 180-day floors, forgeries as notifications when unset, never as none")
    func periods() {
        let day = 86_400.0
        let retention = Retention(
            clearReceiptsAfterDays: 30, deleteAfterDays: nil, deleteForgeriesAfterDays: nil, deleteEventsAfterDays: 10,
            deleteNotificationsAfterDays: 20, deleteRefundRequestsAfterDays: 400
        )
        #expect(retention.periodSeconds("receipts") == 30 * day)
        #expect(retention.periodSeconds("jobs") == nil)
        #expect(retention.periodSeconds("events") == 10 * day)
        #expect(retention.periodSeconds("notifications") == 180 * day)
        #expect(retention.periodSeconds("forgeries") == 180 * day)
        #expect(retention.periodSeconds("refund_requests") == 400 * day)
        #expect(retention.periodSeconds("consumption") == 400 * day)
        #expect(retention.periodSeconds("consents") == nil)
        let forgeriesOnly = Retention.forgeriesOnly
        #expect(Retention.kinds.compactMap { kind in forgeriesOnly.periodSeconds(kind).map { _ in kind } }
                == ["forgeries"])
        #expect(forgeriesOnly.periodSeconds("forgeries") == 7 * day)
        // Refund requests and consumption records share one period, and its floor.
        let short = Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil, deleteRefundRequestsAfterDays: 20)
        #expect(short.periodSeconds("refund_requests") == 180 * day)
        #expect(short.periodSeconds("consumption") == 180 * day)
        #expect(short.periodSeconds("notifications") == nil)
    }
}
