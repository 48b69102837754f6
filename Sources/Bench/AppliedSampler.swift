import Foundation
import PostgresClient
import ThreadSupport

/// Watches `bench --notifications`' notifications become final, as a reader would see them, on a connection of its
/// own. Each one (`perNotification`, with `--rate`): every 5 ms, the final ones from the oldest not yet seen on (ids
/// are handed out in arrival order; with the worker keeping up, a few rows), each noted with the first time it was
/// seen. Or only when the last one is (all stored before the worker starts): every 50 ms, how many are still open,
/// so the reader does not scan thousands of waiting rows every few milliseconds, which cost PostgreSQL as much as
/// a tenth of the worker's work.
final class AppliedSampler: Sendable {
    private struct State {
        var firstSeen: [Int64: ContinuousClock.Instant] = [:]
        var lastSeen: ContinuousClock.Instant?
        var low: Int64
        var stopping = false
        var error: String?
        /// Seen final so far.
        var finished = 0
    }

    private let databaseURL: String
    private let expected: Int
    private let perNotification: Bool
    private let state: ConditionLock<State>
    private let thread = ConditionLock<DedicatedThread?>(nil)

    /// Reads where the bench's notifications will start: past every row there now.
    init(databaseURL: String, expected: Int, perNotification: Bool) throws {
        self.databaseURL = databaseURL
        self.expected = expected
        self.perNotification = perNotification
        let connection = try BenchConnection.open(databaseURL)
        defer { connection.close() }
        let next = try connection.query("SELECT coalesce(max(id), 0) + 1 AS next FROM receipt_notifications")
            .int64(0, "next") ?? 1
        state = ConditionLock(State(low: next))
    }

    func start() {
        let started = try? DedicatedThread.start(name: "bench-sampler") { [self] in sample() }
        thread.withLock { $0 = started }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        thread.withLock { $0 }?.join()
    }

    /// Waits until `count` were seen final, or `deadline`; true if they were.
    func wait(forFinished count: Int, until deadline: ContinuousClock.Instant) -> Bool {
        let timeout = deadline - ContinuousClock.now
        return state.wait(until: { $0.finished >= count || $0.error != nil }, timeout: max(timeout, .zero))
            && state.withLock { $0.error == nil }
    }

    var firstSeen: [Int64: ContinuousClock.Instant] { state.withLock { $0.firstSeen } }
    var lastSeen: ContinuousClock.Instant? { state.withLock { $0.lastSeen } }
    var seenCount: Int { state.withLock { $0.finished } }

    private func sample() {
        do {
            let connection = try BenchConnection.open(databaseURL)
            defer { connection.close() }
            while !state.withLock({ $0.stopping }) {
                let low = state.withLock { $0.low }
                if !perNotification {
                    let open = try connection.query(
                        """
                        SELECT count(*) AS open FROM receipt_notifications
                        WHERE id >= $1 AND state IN ('queued', 'running', 'retry')
                        """,
                        [String(low)]
                    ).int64(0, "open") ?? 0
                    let now = ContinuousClock.now
                    state.withLock { state in
                        let finished = max(0, expected - Int(open))
                        if finished > state.finished { state.lastSeen = now }
                        state.finished = finished
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                    continue
                }
                let rows = try connection.query(
                    "SELECT id FROM receipt_notifications WHERE id >= $1 AND finished_at IS NOT NULL", [String(low)]
                )
                let now = ContinuousClock.now
                let ids = rows.rows.indices.compactMap { rows.int64($0, "id") }
                state.withLock { state in
                    for id in ids where state.firstSeen[id] == nil {
                        state.firstSeen[id] = now
                        state.lastSeen = now
                    }
                    state.finished = state.firstSeen.count
                    while state.firstSeen[state.low] != nil { state.low += 1 }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        } catch {
            state.withLock { $0.error = "\(error)" }
        }
    }
}
