import Foundation
import ReceiptQueue
import Testing
@testable import Workers

/// What lets several writers (`WRITE_CONNECTIONS`) work side by side: notification batches in one lock order with the
/// revocations apart, and the shutdown deadline leaving to a writer the jobs it is writing.
@Suite struct WriterOrderTests {
    static func verified(
        _ id: Int64, type: String, environment: String = "Production", chain: String, signedAt: Int64
    ) -> NotificationsInHand.Verified {
        let notification = ClaimedNotification(
            id: id, leaseToken: Sample.leaseToken, signedPayload: "payload-\(id)", attempts: 1
        )
        let outcome = NotificationOutcome(
            kind: .verified,
            notification: .init(uuid: "uuid-\(id)", type: type, environment: environment, signedDateMs: signedAt),
            transaction: .init(transactionId: "t-\(id)", originalTransactionId: chain)
        )
        return (notification, outcome)
    }

    @Test func revocationsAreWrittenAloneAndTheRestInChainOrder() {
        let batch = [
            Self.verified(1, type: "DID_RENEW", chain: "300", signedAt: 5),
            Self.verified(2, type: "REFUND", chain: "100", signedAt: 1),
            Self.verified(3, type: "DID_RENEW", chain: "100", signedAt: 9),
            Self.verified(4, type: "REVOKE", chain: "200", signedAt: 2),
            Self.verified(5, type: "DID_CHANGE_RENEWAL_STATUS", chain: "100", signedAt: 3),
            Self.verified(6, type: "REFUND_REVERSED", chain: "300", signedAt: 4),
            Self.verified(7, type: "DID_RENEW", environment: "Sandbox", chain: "050", signedAt: 1),
            Self.verified(8, type: "REFUND_PRORATED", chain: "200", signedAt: 7),
        ]
        let (alone, batched) = Worker.lockOrdered(batch)
        // A REFUND, REVOKE or REFUND_REVERSED takes the revocation lock exclusively: never inside a batch.
        #expect(alone.map(\.notification.id) == [2, 4, 6])
        // The rest by environment, chain, then Apple's signing time; a prorated refund keeps its credit and is
        // batched like any other change.
        #expect(batched.map(\.notification.id) == [5, 3, 8, 1, 7])
    }

    @Test func aChainsNotificationsSignedTogetherKeepTheirOrder() {
        let batch = [
            Self.verified(1, type: "DID_RENEW", chain: "100", signedAt: 5),
            Self.verified(2, type: "DID_CHANGE_RENEWAL_PREF", chain: "100", signedAt: 5),
            Self.verified(3, type: "TEST", chain: "", signedAt: 5),
        ]
        let (alone, batched) = Worker.lockOrdered(batch)
        #expect(alone.isEmpty)
        // The TEST notification has no original id: its key is its transaction's own id ("t-3"), as the SQL's.
        #expect(batched.map(\.notification.id) == [1, 2, 3])
    }

    /// The order is the order the SQL locks chains in: `receipt_subscription_apply()` names a chain by the
    /// transaction's original id, else the renewal info's, else the transaction's own id.
    @Test func theChainIsNamedAsTheSQLNamesIt() {
        let both = NotificationOutcome(
            kind: .verified, transaction: .init(transactionId: "t", originalTransactionId: "o"),
            renewal: .init(originalTransactionId: "r")
        )
        #expect(Worker.chain(both) == "o")
        let renewalOnly = NotificationOutcome(
            kind: .verified, transaction: .init(transactionId: "t", originalTransactionId: ""),
            renewal: .init(originalTransactionId: "r")
        )
        #expect(Worker.chain(renewalOnly) == "r")
        let transactionOnly = NotificationOutcome(kind: .verified, transaction: .init(transactionId: "t"))
        #expect(Worker.chain(transactionOnly) == "t")
        #expect(Worker.chain(NotificationOutcome(kind: .verified)) == "")
    }

    /// With two writers, one may reach the shutdown deadline while the other writes a batch: the jobs of that batch
    /// must not be given back under it (their verdicts would come back `lost`, and Apple be asked again).
    @Test func theDeadlineLeavesJobsBeingWrittenToTheirWriter() {
        let state = WorkerState()
        #expect(state.hold((1...4).map(WorkerStateTests.job)))
        WorkerStateTests.answer(state, 1)
        WorkerStateTests.answer(state, 2)
        let writing = state.takeOutcomes(max: 10, timeout: 0).map(\.lease.jobId)
        #expect(writing == [1, 2])
        WorkerStateTests.answer(state, 3)

        let released = state.dropAll().map(\.jobId).sorted()
        #expect(released == [3, 4], "jobs being written were given back under their writer")

        // Once written they are simply gone; a later deadline gives back nothing of them.
        _ = state.finished(writing)
        #expect(state.dropAll().isEmpty)
    }

    @Test func jobsWrittenBeforeTheDeadlineAreNotHeldBackFromIt() {
        let state = WorkerState()
        #expect(state.hold((1...3).map(WorkerStateTests.job)))
        WorkerStateTests.answer(state, 1)
        let written = state.takeOutcomes(max: 10, timeout: 0).map(\.lease.jobId)
        _ = state.finished(written)
        #expect(state.hold([WorkerStateTests.job(1)]), "a job claimed again after it was written")
        #expect(state.dropAll().map(\.jobId).sorted() == [1, 2, 3])
    }
}
