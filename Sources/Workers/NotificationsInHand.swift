import ReceiptQueue
import Synchronization

/// The notifications a worker's verifying threads hold right now (claimed, not yet written back), whose leases the
/// notifications loop renews; and how many of those threads are still running.
final class NotificationsInHand: Sendable {
    private let state = Mutex<(held: [Int64: ClaimedNotification], running: Int)>(([:], 0))

    func hold(_ notifications: [ClaimedNotification]) {
        state.withLock { state in
            for notification in notifications { state.held[notification.id] = notification }
        }
    }

    /// Written back (or given up): no longer renewed.
    func release(_ notification: ClaimedNotification) {
        state.withLock { _ = $0.held.removeValue(forKey: notification.id) }
    }

    func release(_ notifications: [ClaimedNotification]) {
        state.withLock { state in
            for notification in notifications { state.held.removeValue(forKey: notification.id) }
        }
    }

    var held: [ClaimedNotification] { state.withLock { Array($0.held.values) } }

    func threadStarted() { state.withLock { $0.running += 1 } }

    func threadEnded() { state.withLock { $0.running -= 1 } }

    var runningThreads: Int { state.withLock { $0.running } }
}
