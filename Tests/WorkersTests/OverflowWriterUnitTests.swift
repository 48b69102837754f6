import Dispatch
import Foundation
import ReceiptQueue
import ReceiptRules
import Testing
@testable import Workers

/// What an overflow writer (WRITE_CONNECTIONS above 1) takes: nothing while fewer verdicts than its backlog wait
/// (the first writer keeps up), a batch once that many do; and it is told at once when there is nothing more to write.
@Suite struct OverflowWriterUnitTests {
    static func outcomes(_ state: WorkerState, _ ids: ClosedRange<Int64>) {
        for id in ids { WorkerStateTests.answer(state, id) }
    }

    /// `body` on a thread of its own; the returned function waits (up to 30 s) for its result, nil if it did not
    /// return by then.
    static func inBackground<T: Sendable>(_ body: @escaping @Sendable () -> T) -> () -> T? {
        let box = Box<T>()
        Thread.detachNewThread {
            box.value = body()
            box.done.signal()
        }
        return { box.done.wait(timeout: .now() + 30) == .success ? box.value : nil }
    }

    /// Written by one thread before `done` is signalled, read after waiting for it.
    final class Box<T>: @unchecked Sendable {
        var value: T?
        let done = DispatchSemaphore(value: 0)
    }

    // MARK: WorkerState.takeBacklog

    @Test func belowTheBacklogNothingIsTakenAndTheOutcomesStayForTheFirstWriter() {
        let state = WorkerState()
        #expect(state.hold((1...10).map(WorkerStateTests.job)))
        Self.outcomes(state, 1...3)
        #expect(state.takeBacklog(max: 10, backlog: 4, timeout: 0.01).isEmpty)
        // The three are still there, for the first writer.
        #expect(state.takeOutcomes(max: 10, timeout: 0).map(\.lease.jobId) == [1, 2, 3])
    }

    @Test func atTheBacklogABatchOfAtMostMaxIsTakenOldestFirst() {
        let state = WorkerState()
        #expect(state.hold((1...10).map(WorkerStateTests.job)))
        Self.outcomes(state, 1...4)
        #expect(state.takeBacklog(max: 10, backlog: 4, timeout: 0).map(\.lease.jobId) == [1, 2, 3, 4])
        #expect(state.takeOutcomes(max: 10, timeout: 0).isEmpty)

        Self.outcomes(state, 5...10)
        #expect(state.takeBacklog(max: 4, backlog: 4, timeout: 0).map(\.lease.jobId) == [5, 6, 7, 8])
        // Two left: under the backlog again.
        #expect(state.takeBacklog(max: 4, backlog: 4, timeout: 0).isEmpty)
        #expect(state.takeOutcomes(max: 10, timeout: 0).map(\.lease.jobId) == [9, 10])
    }

    /// Its loop asks every 0.25 s; a backlog that builds meanwhile is taken when it is complete, not at the timeout.
    @Test func aBacklogThatBuildsWhileWaitingIsTakenThen() throws {
        let state = WorkerState()
        #expect(state.hold((1...4).map(WorkerStateTests.job)))
        Self.outcomes(state, 1...3)
        let taken = Self.inBackground { state.takeBacklog(max: 10, backlog: 4, timeout: 60).map(\.lease.jobId) }
        Thread.sleep(forTimeInterval: 0.05)  // most likely waiting by now (if not, it finds four at once)
        Self.outcomes(state, 4...4)
        let batch = taken()
        #expect(batch == [1, 2, 3, 4], "the waiting overflow writer was not woken by the fourth outcome")
    }

    /// Claiming over and nothing in hand: the writers end. An overflow writer must not sit out its timeout first
    /// (a drain's end, a shutdown, would wait for it).
    @Test func claimingDoneAndNothingHeldReturnsEmptyAtOnce() throws {
        let state = WorkerState()
        state.claimLoopEnded()
        let asked = ContinuousClock.now
        #expect(state.takeBacklog(max: 10, backlog: 4, timeout: 10).isEmpty)
        #expect(ContinuousClock.now - asked < .seconds(5), "takeBacklog waited for its timeout")
        #expect(state.everythingWritten)
    }

    @Test func claimingDoneWhileWaitingEndsTheWait() throws {
        let state = WorkerState()
        #expect(state.hold([WorkerStateTests.job(1)]))
        let returned = Self.inBackground { state.takeBacklog(max: 10, backlog: 4, timeout: 60).map(\.lease.jobId) }
        Thread.sleep(forTimeInterval: 0.05)
        // The job is written by the first writer, then claiming ends.
        _ = state.finished([1])
        state.claimLoopEnded()
        let batch = returned()
        #expect(batch == [], "the overflow writer was not released when claiming ended with nothing held")
    }

    // MARK: NotificationsInHand.takeVerified(limit:backlog:timeout:)

    static func notification(_ id: Int64) -> ClaimedNotification {
        ClaimedNotification(id: id, leaseToken: Sample.leaseToken, signedPayload: "payload-\(id)", attempts: 1)
    }

    static func verify(_ inHand: NotificationsInHand, _ ids: ClosedRange<Int64>) {
        for id in ids {
            inHand.verified(notification(id), NotificationOutcome(kind: .rejected, reason: .invalidSignature))
        }
    }

    @Test func notificationsBelowTheBacklogStayForTheLoop() {
        let inHand = NotificationsInHand()
        inHand.add((1...20).map(Self.notification))
        Self.verify(inHand, 1...9)
        #expect(inHand.takeVerified(limit: 50, backlog: 10, timeout: .milliseconds(10)).isEmpty)
        #expect(inHand.counts.verified == 9)
        #expect(inHand.takeVerified(limit: 50).map(\.notification.id) == Array(1...9))
    }

    @Test func notificationsAtTheBacklogAreTakenUpToTheLimitOldestFirst() {
        let inHand = NotificationsInHand()
        inHand.add((1...20).map(Self.notification))
        Self.verify(inHand, 1...10)
        #expect(inHand.takeVerified(limit: 50, backlog: 10, timeout: .zero).map(\.notification.id) == Array(1...10))
        #expect(inHand.counts.verified == 0)
        // Still held (their leases renewed) until written back and released.
        #expect(inHand.counts.held == 20)

        Self.verify(inHand, 11...20)
        #expect(inHand.takeVerified(limit: 4, backlog: 3, timeout: .zero).map(\.notification.id) == [11, 12, 13, 14])
        #expect(inHand.takeVerified(limit: 4, backlog: 3, timeout: .zero).map(\.notification.id) == [15, 16, 17, 18])
        #expect(inHand.takeVerified(limit: 4, backlog: 3, timeout: .zero).isEmpty, "two left, under the backlog")
        #expect(inHand.counts.verified == 2)
    }

    @Test func aNotificationBacklogThatBuildsWhileWaitingIsTakenThen() throws {
        let inHand = NotificationsInHand()
        inHand.add((1...10).map(Self.notification))
        Self.verify(inHand, 1...9)
        let taken = Self.inBackground {
            inHand.takeVerified(limit: 50, backlog: 10, timeout: .seconds(60)).map(\.notification.id)
        }
        Thread.sleep(forTimeInterval: 0.05)
        Self.verify(inHand, 10...10)
        let batch = taken()
        #expect(batch == Array(1...10))
    }

    // MARK: WorkerConfiguration

    static func configuration(writeConnections: Int) -> WorkerConfiguration {
        var configuration = WorkerConfiguration(workerId: "w", rules: Sample.rules)
        configuration.writeConnections = writeConnections
        return configuration
    }

    @Test func writeConnectionsDefaultsToTwoAndClosesAfterThirtySecondsIdle() throws {
        let configuration = WorkerConfiguration(workerId: "w", rules: Sample.rules)
        #expect(configuration.writeConnections == 2)
        #expect(configuration.overflowWriterIdleSeconds == 30)
        #expect(WorkerConfiguration.maxWriteConnections == 8)
        try configuration.validate(appleTimeoutSeconds: 30)
    }

    @Test(arguments: [1, 8])
    func writeConnectionsInRangeIsAccepted(_ count: Int) throws {
        try Self.configuration(writeConnections: count).validate(appleTimeoutSeconds: 30)
    }

    @Test(arguments: [0, 9, -1])
    func writeConnectionsOutOfRangeIsRefusedNamingTheSetting(_ count: Int) {
        let error = #expect(throws: WorkerConfigurationError.self) {
            try Self.configuration(writeConnections: count).validate(appleTimeoutSeconds: 30)
        }
        #expect(error?.setting == "WRITE_CONNECTIONS")
        #expect(error?.code == .outOfRange)
        #expect(error?.message.contains("WRITE_CONNECTIONS must be 1-8, got \(count)") == true, "\(String(describing: error))")
    }
}
