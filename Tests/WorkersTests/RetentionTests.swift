import Testing
import Workers

@Suite("Retention periods")
struct RetentionTests {
    @Test("days become seconds; a period not given is a hundred years")
    func periods() {
        let both = Retention(clearReceiptsAfterDays: 30, deleteAfterDays: 0.5)
        #expect(both.clearReceiptsAfterSeconds == 30 * 86_400)
        #expect(both.deleteAfterSeconds == 43_200)
        let clearOnly = Retention(clearReceiptsAfterDays: 7, deleteAfterDays: nil)
        #expect(clearOnly.deleteAfterSeconds == Retention.neverDays * 86_400)
        #expect(Retention.neverDays >= 365 * 100)
    }
}

@Suite("Retention periods of events, notifications and refund requests")
struct RetentionKindTests {
    @Test("not set, each follows the jobs' period; set, its own (never included)")
    func ownPeriods() {
        let umbrella = Retention(clearReceiptsAfterDays: nil, deleteAfterDays: 90)
        #expect(umbrella.deleteEventsAfterSeconds == 90 * 86_400)
        #expect(umbrella.deleteNotificationsAfterSeconds == 90 * 86_400)
        #expect(umbrella.deleteRefundRequestsAfterSeconds == 90 * 86_400)
        let own = Retention(
            clearReceiptsAfterDays: nil, deleteAfterDays: 90, deleteEventsAfterDays: Retention.neverDays,
            deleteNotificationsAfterDays: 200, deleteRefundRequestsAfterDays: 400
        )
        #expect(own.deleteAfterSeconds == 90 * 86_400)
        #expect(own.deleteEventsAfterSeconds == Retention.neverDays * 86_400)
        #expect(own.deleteNotificationsAfterSeconds == 200 * 86_400)
        #expect(own.deleteRefundRequestsAfterSeconds == 400 * 86_400)
        #expect(!Retention.forgeriesOnly.deletesMoreThanForgeries)
        #expect(Retention(clearReceiptsAfterDays: nil, deleteAfterDays: nil, deleteEventsAfterDays: 30)
            .deletesMoreThanForgeries)
        // Nothing set: events, notifications and refund requests are kept like jobs, for good.
        #expect(Retention.forgeriesOnly.deleteRefundRequestsAfterSeconds == Retention.neverDays * 86_400)
    }
}
