import Foundation
import PostgresClient
import ReceiptQueue

/// The notifications loop's wake-up: LISTEN on `channel` on the connection it shares with the maintenance loop, and
/// the NOTIFYs that came. LISTEN is sent again on every new connection (after an outage), and a new connection
/// counts as a wake-up: what was announced while none listened is claimed at once.
struct NotificationWakeUp {
    let channel: String
    /// The connection LISTEN was sent on (held, so a new connection is never taken for it).
    private var listening: PostgresConnection?

    init(channel: String) {
        self.channel = channel
    }

    /// LISTENs on `store`'s connection unless done already; takes the NOTIFYs that came, without waiting. Returns
    /// whether any came, or the connection is new.
    @discardableResult
    mutating func take(_ store: JobStore, waitingMilliseconds: Int = 0) throws -> Bool {
        var fresh = false
        if listening !== store.connection {
            try store.connection.listen(channel)
            listening = store.connection
            fresh = true
        }
        let notifications = try store.connection.waitForNotifications(timeoutMilliseconds: waitingMilliseconds)
        return fresh || !notifications.isEmpty
    }

    /// Whether a wake-up came, without waiting.
    mutating func poll(_ session: DatabaseSession) -> Bool {
        let taken = session.perform(giveUp: { true }) { store in try take(store) }
        if case .success(true) = taken { return true }
        return false
    }

    /// Waits up to `seconds` for a wake-up, in slices of at most 50 ms, letting the maintenance loop use the shared
    /// connection between them. Returns whether one came (false: the time is up, the worker stops, or the database is
    /// away; the caller's poll then claims).
    mutating func wait(_ session: DatabaseSession, seconds: Double, stopping: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !stopping() {
            let slice = min(0.05, deadline.timeIntervalSinceNow)
            guard slice > 0 else { return false }
            let taken = session.perform(giveUp: { true }) { store in
                try take(store, waitingMilliseconds: max(1, Int((slice * 1000).rounded(.up))))
            }
            switch taken {
            case .success(true):
                return true
            case .success(false):
                // Out of the lock a moment: the maintenance loop, blocked on it, takes the connection now.
                Thread.sleep(forTimeInterval: 0.001)
            case .failure, nil:
                Thread.sleep(forTimeInterval: slice)
            }
        }
        return false
    }
}
