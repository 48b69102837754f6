import ReceiptQueue
import ThreadSupport

/// The notifications a worker holds: claimed by the notifications loop, waiting in `queue` for a verifying thread,
/// verified (waiting in `verified` for the loop to write them back, a batch at a time), then written back. Every one
/// not yet written back is in `held`, whose leases the loop renews.
final class NotificationsInHand: Sendable {
    typealias Verified = (notification: ClaimedNotification, result: NotificationOutcome)

    private struct State {
        /// Claimed, not yet taken by a thread; oldest first.
        var queue: [ClaimedNotification] = []
        /// Verified, not yet written back; in the order verified.
        var verified: [Verified] = []
        /// Claimed, not yet written back (those in `queue` and `verified` among them).
        var held: [Int64: ClaimedNotification] = [:]
        var runningThreads = 0
    }

    private let state = ConditionLock(State())

    func add(_ notifications: [ClaimedNotification]) {
        state.withLock { state in
            state.queue.append(contentsOf: notifications)
            for notification in notifications { state.held[notification.id] = notification }
        }
    }

    /// The next notification to verify: the oldest waiting, as soon as there is one; nil after `timeout`.
    func next(timeout: Duration) -> ClaimedNotification? {
        state.wait(for: { state in state.queue.isEmpty ? nil : state.queue.removeFirst() }, timeout: timeout)
    }

    /// Every notification still waiting for a thread, taken out (the worker stops: they are given back).
    func takeWaiting() -> [ClaimedNotification] {
        state.withLock { state in
            let waiting = state.queue
            state.queue = []
            return waiting
        }
    }

    /// A thread's verdict on `notification`, to be written back by the loop.
    func verified(_ notification: ClaimedNotification, _ result: NotificationOutcome) {
        state.withLock { $0.verified.append((notification, result)) }
    }

    /// Up to `limit` verified notifications, oldest verdict first, taken out to be written back (still held: their
    /// leases are renewed until `release`).
    func takeVerified(limit: Int) -> [Verified] {
        state.withLock { Self.take(limit, from: &$0) }
    }

    /// For an overflow writer: up to `limit` verified notifications once at least `backlog` wait (the loop is busy
    /// writing or claiming); empty after `timeout`.
    func takeVerified(limit: Int, backlog: Int, timeout: Duration) -> [Verified] {
        let taken = state.wait(
            for: { state -> [Verified]? in state.verified.count >= backlog ? Self.take(limit, from: &state) : nil },
            timeout: timeout
        )
        return taken ?? []
    }

    /// The oldest `limit` verdicts, taken out.
    private static func take(_ limit: Int, from state: inout State) -> [Verified] {
        let taken = Array(state.verified.prefix(limit))
        state.verified.removeFirst(taken.count)
        return taken
    }

    /// Written back (or given up): no longer renewed.
    func release(_ notifications: [ClaimedNotification]) {
        state.withLock { state in
            for notification in notifications { state.held.removeValue(forKey: notification.id) }
        }
    }

    /// Every notification not yet written back.
    var held: [ClaimedNotification] { state.withLock { Array($0.held.values) } }

    var counts: (waiting: Int, verified: Int, held: Int) {
        state.withLock { ($0.queue.count, $0.verified.count, $0.held.count) }
    }

    /// Waits until a verdict is ready to be written, or fewer than `count` notifications wait for a thread while
    /// fewer than `room` are held; at most `timeout`.
    func waitForWork(fewerWaitingThan count: Int, heldBelow room: Int, timeout: Duration) {
        state.wait(
            until: { !$0.verified.isEmpty || ($0.queue.count < count && $0.held.count < room) }, timeout: timeout
        )
    }

    func threadStarted() { state.withLock { $0.runningThreads += 1 } }

    func threadEnded() { state.withLock { $0.runningThreads -= 1 } }

    var runningThreads: Int { state.withLock { $0.runningThreads } }
}
