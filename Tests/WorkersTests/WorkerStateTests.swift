import ReceiptQueue
import ReceiptRules
import Testing
@testable import Workers

/// The claim loop's room: MAX_IN_FLIGHT bounds the jobs still waiting for Apple; answered jobs waiting for the
/// writer do not count, until a backlog of them pauses claiming.
@Suite struct WorkerStateTests {
    static func job(_ id: Int64) -> ClaimedJob {
        ClaimedJob(
            id: id,
            leaseToken: Sample.leaseToken,
            order: OrderContext(
                jobId: id, orderId: "order-\(id)", userId: "user-1", productId: Sample.product,
                bundleId: Sample.bundleId, jobCreatedAtMs: Sample.orderTimeMs, attempt: 1
            ),
            receiptData: "TUlJ",
            receiptHash: "3b1f0c9a"
        )
    }

    static func answer(_ state: WorkerState, _ id: Int64) {
        state.submit(Sample.decider.malformedInput(job(id), problem: "test"))
    }

    static func room(_ state: WorkerState, limit: Int = 4, backlog: Int = 2) -> Int {
        state.waitForRoom(limit: limit, backlog: backlog, timeout: 0)
    }

    @Test func answeredJobsFreeTheirCallSlotUntilTheBacklogIsFull() {
        let state = WorkerState()
        #expect(Self.room(state) == 4)
        #expect(state.hold((1...4).map(Self.job)))
        #expect(Self.room(state) == 0)
        #expect(state.inFlightCount == 4)

        Self.answer(state, 1)
        #expect(Self.room(state) == 1)
        #expect(state.inFlightCount == 3)
        #expect(state.heldCount == 4)

        // A second answer fills the backlog: nothing more is claimed until the writer catches up.
        Self.answer(state, 2)
        #expect(Self.room(state) == 0)

        let removed = state.finished([1, 2])
        #expect(Set(removed.keys) == [1, 2])
        #expect(Self.room(state) == 2)
        #expect(state.heldCount == 2)
    }

    @Test func aJobAnsweredTwiceOrNotHeldCountsOnce() {
        let state = WorkerState()
        #expect(state.hold([Self.job(1), Self.job(2)]))
        Self.answer(state, 1)
        Self.answer(state, 1)
        Self.answer(state, 9)  // not in hand (released meanwhile): no call slot to free
        #expect(state.inFlightCount == 1)
        _ = state.finished([1, 9])
        #expect(state.inFlightCount == 1)
        #expect(state.heldCount == 1)
        #expect(Self.room(state, limit: 2, backlog: 1) == 1)
    }

    @Test func droppingEverythingEmptiesTheBacklog() {
        let state = WorkerState()
        #expect(state.hold([Self.job(1), Self.job(2)]))
        Self.answer(state, 1)
        Self.answer(state, 2)
        #expect(Self.room(state, limit: 2, backlog: 2) == 0)
        #expect(state.dropAll().count == 2)
        #expect(Self.room(state, limit: 2, backlog: 2) == 2)
    }

    /// At the shutdown deadline the writer gives every job in hand back and stops. Calls still out answer later, and
    /// a claim under way may return later: neither may leave anything in hand, or the worker would wait for a writer
    /// that is gone (and renew those leases) for ever.
    @Test func afterTheDeadlineReleaseNothingIsHeldOrQueued() {
        let state = WorkerState()
        #expect(state.hold([Self.job(1), Self.job(2)]))
        state.stop(grace: 0)
        #expect(state.dropAll().count == 2)
        Self.answer(state, 1)
        #expect(!state.hold([Self.job(3)]), "a claim returning after the release must give its jobs back itself")
        state.claimLoopEnded()
        #expect(state.heldCount == 0)
        #expect(state.everythingWritten)
        #expect(state.takeOutcomes(max: 10, timeout: 0).isEmpty)
    }
}
