import ReceiptQueue
import ThreadSupport

/// The notifications a worker holds: claimed by the notifications loop, waiting in `queue` for a verifying thread,
/// then verified and written back. Every one not yet written back is in `held`, whose leases the loop renews.
final class NotificationsInHand: Sendable {
    private struct State {
        /// Claimed, not yet taken by a thread; oldest first.
        var queue: [ClaimedNotification] = []
        /// Claimed, not yet written back (those in `queue` among them).
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

    /// Written back (or given up): no longer renewed.
    func release(_ notifications: [ClaimedNotification]) {
        state.withLock { state in
            for notification in notifications { state.held.removeValue(forKey: notification.id) }
        }
    }

    /// Every notification not yet written back.
    var held: [ClaimedNotification] { state.withLock { Array($0.held.values) } }

    var counts: (waiting: Int, held: Int) { state.withLock { ($0.queue.count, $0.held.count) } }

    /// Waits until fewer than `count` notifications wait for a thread, at most `timeout`.
    func waitForFewerWaiting(than count: Int, timeout: Duration) {
        state.wait(until: { $0.queue.count < count }, timeout: timeout)
    }

    func threadStarted() { state.withLock { $0.runningThreads += 1 } }

    func threadEnded() { state.withLock { $0.runningThreads -= 1 } }

    var runningThreads: Int { state.withLock { $0.runningThreads } }
}
