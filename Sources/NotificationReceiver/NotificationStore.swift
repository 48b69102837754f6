import Dispatch
import PostgresClient
import ReceiptQueue
import Synchronization

/// What became of one notification handed to the database.
enum StoreOutcome: Sendable, Hashable {
    /// Committed (now or by an earlier delivery of the same bytes) as row `id`.
    case stored(id: Int64)
    /// `receive_notification()` refused the payload's shape; the one-line reason.
    case refused(String)
    /// Not stored: the database could not be reached or failed; Apple should retry.
    case unavailable(String)
    /// Not handed to the database: `maxWaiting` notifications are waiting for it already; Apple should retry.
    case busy
}

/// Stores notifications through a few database connections, each used on a serial queue of its own, so libpq's
/// blocking calls never run on an event loop. A connection is opened on first use, dropped when it fails, and
/// opened again by the next notification.
final class NotificationStore: Sendable {
    private let lanes: [DatabaseLane]
    private let next = Atomic<Int>(0)
    private let inFlight = DispatchGroup()
    private let maxWaiting: Int
    /// Notifications handed to a lane and not answered yet.
    private let waiting = Atomic<Int>(0)
    /// `.busy` answers not reported yet by `countBusy()`, and when it last reported (uptime seconds; 0: never).
    private let busyCount = Atomic<Int>(0)
    private let lastBusyReport = Atomic<Int64>(0)

    init(databaseURL: String, connections: Int, maxWaiting: Int) {
        lanes = (0..<max(1, connections)).map { DatabaseLane(url: databaseURL, index: $0) }
        self.maxWaiting = max(1, maxWaiting)
    }

    /// Stores `signedPayload` on the next connection in turn; `completion` runs on that connection's queue, or at
    /// once with `.busy` when `maxWaiting` notifications are waiting for the database already.
    func store(_ signedPayload: String, completion: @escaping @Sendable (StoreOutcome) -> Void) {
        guard waiting.add(1, ordering: .relaxed).newValue <= maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            completion(.busy)
            return
        }
        let lane = lanes[next.add(1, ordering: .relaxed).oldValue % lanes.count]
        inFlight.enter()
        lane.queue.async { [inFlight] in
            let outcome = lane.store(signedPayload)
            self.waiting.subtract(1, ordering: .relaxed)
            completion(outcome)
            inFlight.leave()
        }
    }

    /// Counts a `.busy` answer; returns how many there were since the last time it returned a number, at most once
    /// every 10 seconds (the first at once), so a stream of refusals is logged as a line now and then.
    func countBusy() -> Int? {
        busyCount.add(1, ordering: .relaxed)
        let now = Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000_000)
        let last = lastBusyReport.load(ordering: .relaxed)
        guard last == 0 || now - last >= 10,
            lastBusyReport.compareExchange(expected: last, desired: max(now, 1), ordering: .relaxed).exchanged
        else { return nil }
        return busyCount.exchange(0, ordering: .relaxed)
    }

    /// Waits up to `timeout` for the notifications handed over so far; true if all were answered.
    func waitForInFlight(timeout: Duration) -> Bool {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        return inFlight.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
    }

    /// Closes the connections once their queues are idle (one still waiting on the database is left to the exit).
    func close() {
        for lane in lanes { lane.queue.async { lane.close() } }
    }
}

/// One connection and the queue it is used on.
/// `@unchecked Sendable`: `connection` is only touched on `queue`, one block at a time.
private final class DatabaseLane: @unchecked Sendable {
    let queue: DispatchQueue
    private let url: String
    private var connection: PostgresConnection?

    init(url: String, index: Int) {
        self.url = url
        self.queue = DispatchQueue(label: "receipt-worker.notifications.db-\(index)")
    }

    /// Runs on `queue`. A connection that worked before and broke since (the server restarted) gets one more try
    /// on a new connection: the same bytes are one row, so trying again cannot store a notification twice.
    func store(_ signedPayload: String) -> StoreOutcome {
        var mayRetry = connection != nil
        while true {
            do {
                let open = try connection ?? PostgresConnection(url)
                connection = open
                return .stored(id: try NotificationInbox(connection: open).receive(signedPayload, source: .receiver))
            } catch let error as PostgresError where error.isRefusedNotificationPayload {
                return .refused(Self.reason(error.message))
            } catch let error as PostgresError where error.isConnectionProblem {
                close()
                if mayRetry {
                    mayRetry = false
                    continue
                }
                return .unavailable("\(error)")
            } catch {
                return .unavailable("\(error)")
            }
        }
    }

    func close() {
        connection?.close()
        connection = nil
    }

    /// The server's message without the function's name in front.
    private static func reason(_ message: String) -> String {
        let prefix = "receive_notification: "
        let line = message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
        return line.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? line
    }
}
