import Foundation
import ThreadSupport

/// `bench --soak`'s API layer: enqueues scenario receipts `rate` a second on a connection of its own, every 50 ms
/// those due by then (one multi-row `enqueue_receipt()` statement), until stopped; each job's enqueue moment goes to
/// the recorder.
final class SoakEnqueuer: Sendable {
    private struct State {
        var stopping = false
        var joined = false
        var error: String?
    }

    private let state = ConditionLock(State())
    private let thread: DedicatedThread

    init(
        databaseURL: String, tag: String, rate: Double, from start: ContinuousClock.Instant, recorder: SoakRecorder
    ) throws {
        thread = try DedicatedThread.start(name: "soak-enqueue") { [state] in
            do {
                let connection = try BenchConnection.open(databaseURL)
                defer { connection.close() }
                let enqueuer = BenchEnqueuer(connection: connection)
                var made = 0
                var batch = 0
                while !state.wait(until: \.stopping, timeout: .milliseconds(50)) {
                    let due = Int((ContinuousClock.now - start).seconds * rate)
                    guard due > made else { continue }
                    // Order and transaction ids `<tag>-<batch>-<n>`: new in every statement.
                    let orders = BenchReceipts.orders(count: due - made, tag: tag, prefix: "\(batch)-")
                    let sent = ContinuousClock.now
                    let ids = try enqueuer.enqueue(orders, batch: orders.count, prepare: batch == 0)
                    recorder.enqueued(ids, sent: sent)
                    made = due
                    batch += 1
                }
            } catch {
                state.withLock { $0.error = "enqueueing: \(error)" }
            }
        }
    }

    /// Stops enqueueing and waits for the thread; idempotent.
    func stop() {
        let join = state.withLock { state in
            defer { (state.stopping, state.joined) = (true, true) }
            return !state.joined
        }
        if join { thread.join() }
    }

    /// Why enqueueing stopped early, if it did.
    var error: String? { state.withLock { $0.error } }
}
