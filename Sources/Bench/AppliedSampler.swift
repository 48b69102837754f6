import Foundation
import PostgresClient
import ThreadSupport

/// Watches `bench --notifications`' notifications become final, as a reader would see them: every 5 ms, on a
/// connection of its own, the final ones from the oldest not yet seen on (ids are handed out in arrival order), each
/// noted with the first time it was seen.
final class AppliedSampler: Sendable {
    private struct State {
        var firstSeen: [Int64: ContinuousClock.Instant] = [:]
        var lastSeen: ContinuousClock.Instant?
        var low: Int64
        var stopping = false
        var error: String?
    }

    private let databaseURL: String
    private let state: ConditionLock<State>
    private let thread = ConditionLock<DedicatedThread?>(nil)

    /// Reads where the bench's notifications will start: past every row there now.
    init(databaseURL: String) throws {
        self.databaseURL = databaseURL
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
        return state.wait(until: { $0.firstSeen.count >= count || $0.error != nil }, timeout: max(timeout, .zero))
            && state.withLock { $0.error == nil }
    }

    var firstSeen: [Int64: ContinuousClock.Instant] { state.withLock { $0.firstSeen } }
    var lastSeen: ContinuousClock.Instant? { state.withLock { $0.lastSeen } }
    var seenCount: Int { state.withLock { $0.firstSeen.count } }

    private func sample() {
        do {
            let connection = try BenchConnection.open(databaseURL)
            defer { connection.close() }
            while !state.withLock({ $0.stopping }) {
                let low = state.withLock { $0.low }
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
                    while state.firstSeen[state.low] != nil { state.low += 1 }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        } catch {
            state.withLock { $0.error = "\(error)" }
        }
    }
}
