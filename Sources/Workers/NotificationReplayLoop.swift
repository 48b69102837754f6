import AppStoreClient
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ThreadSupport

/// The periodic replay a `work` process runs (NOTIFICATIONS_REPLAY_MINUTES): every interval, the notifications Apple
/// could not deliver in the last `lookBackHours` (Get Notification History, failures only) are stored with
/// `receive_notification(…, 'history')`, so a receiver outage longer than Apple's own retries loses nothing. Stored
/// twice is stored once, and a notification applied before is a duplicate, so overlapping windows are harmless.
/// Among several work processes, one replays at a time (a session advisory lock); the others skip that round.
/// It runs on a thread of its own, with a connection opened for each round only.
public final class NotificationReplayLoop: Sendable {
    /// The advisory lock key that keeps replays of several processes apart.
    static let lockKey: Int64 = 0x7265_706C_6179  // "replay"

    let replay: NotificationReplay
    let databaseURL: String
    let intervalSeconds: Double
    let lookBackHours: Double
    let logger: Logger
    private let stopping = ConditionLock(false)

    public init(
        replay: NotificationReplay, databaseURL: String, intervalSeconds: Double, lookBackHours: Double = 72,
        logger: Logger
    ) {
        self.replay = replay
        self.databaseURL = databaseURL
        self.intervalSeconds = intervalSeconds
        self.lookBackHours = lookBackHours
        self.logger = logger
    }

    /// Starts the loop on a thread of its own; the first round runs one interval after the start.
    public func start() throws -> DedicatedThread {
        try DedicatedThread.start(name: "notif-replay") { [self] in
            while !stopping.wait(until: { $0 }, timeout: .seconds(intervalSeconds)) {
                round()
            }
        }
    }

    /// Ends the loop (a round in progress finishes its current page).
    public func stop() {
        stopping.withLock { $0 = true }
    }

    /// One replay, if no other process is replaying.
    func round() {
        let end = Date()
        let start = end.addingTimeInterval(-lookBackHours * 3600)
        do {
            let connection = try PostgresConnection(databaseURL)
            defer { connection.close() }
            let locked = try connection.query("SELECT pg_try_advisory_lock($1) AS locked", [String(Self.lockKey)])
            guard locked[0, "locked"] == "t" else { return }
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [String(Self.lockKey)]) }
            let inbox = NotificationInbox(connection: connection)
            let summary = try replay.run(from: start, until: end, onlyFailures: true, into: inbox)
            let metadata: Logger.Metadata = [
                "read": "\(summary.read)", "new": "\(summary.new)", "known": "\(summary.known)",
                "refused": "\(summary.refused)", "hours": "\(lookBackHours)",
            ]
            if summary.new > 0 {
                logger.warning("notifications Apple could not deliver were taken from its history", metadata: metadata)
            } else {
                logger.debug("notification history replayed", metadata: metadata)
            }
        } catch {
            logger.error("notification history replay failed; the next round tries again", metadata: [
                "error": "\(error)",
            ])
        }
    }
}
