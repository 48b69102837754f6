import ReceiptQueue
import ThreadSupport
import Workers

/// What `bench --soak` needs of the worker's verdicts: per interval, enqueue → verdict of each job that reached its
/// verdict, and the retries and dead letters; and the jobs still open. Only the jobs still open and the current
/// interval's figures are kept, so the recorder's memory stays flat however long the run.
final class SoakRecorder: Sendable {
    /// What one interval collected.
    struct Interval {
        var enqueued = 0
        var finished = 0
        var verified = 0
        var retries = 0
        var dead = 0
        var lost = 0
        /// Enqueue → verdict, µs.
        var latencies: [Int64] = []
    }

    private struct State {
        /// The jobs enqueued and not final yet: when their enqueue statement was sent.
        var open: [Int64: ContinuousClock.Instant] = [:]
        /// Verdicts written before the enqueuer handed their ids over (the statement returns after the worker may
        /// have finished them): when. Entries for jobs the run did not enqueue are dropped after a minute.
        var early: [Int64: (state: JobStore.Completion.State, at: ContinuousClock.Instant)] = [:]
        var interval = Interval()
        var totalEnqueued = 0
    }

    private let state = ConditionLock(State())

    /// The hook to give the worker.
    var events: WorkerEvents {
        WorkerEvents(jobWritten: { [self] completion, _, _ in
            written(completion.jobId, completion.state, at: ContinuousClock.now)
        })
    }

    /// The enqueuer's report: `ids` were enqueued by a statement sent at `sent`.
    func enqueued(_ ids: [Int64], sent: ContinuousClock.Instant) {
        state.withLock { state in
            state.interval.enqueued += ids.count
            state.totalEnqueued += ids.count
            for id in ids {
                if let early = state.early.removeValue(forKey: id) {
                    if early.state.isFinal {
                        Self.count(early.state, latency: early.at - sent, in: &state.interval)
                        continue
                    }
                    Self.count(early.state, latency: nil, in: &state.interval)
                }
                state.open[id] = sent
            }
        }
    }

    func written(_ id: Int64, _ outcome: JobStore.Completion.State, at now: ContinuousClock.Instant) {
        state.withLock { state in
            guard let sent = state.open[id] else {
                state.early[id] = (outcome, now)
                return
            }
            if outcome.isFinal {
                state.open[id] = nil
                Self.count(outcome, latency: now - sent, in: &state.interval)
            } else {
                Self.count(outcome, latency: nil, in: &state.interval)
            }
        }
    }

    private static func count(_ outcome: JobStore.Completion.State, latency: Duration?, in interval: inout Interval) {
        switch outcome {
        case .verified: interval.verified += 1
        case .rejected: break
        case .dead: interval.dead += 1
        case .retry: interval.retries += 1
        case .lost: interval.lost += 1
        }
        guard outcome.isFinal else { return }
        interval.finished += 1
        if let latency { interval.latencies.append(Int64(latency.seconds * 1e6)) }
    }

    /// The interval's figures, starting the next one; verdicts of jobs not enqueued by the run (older than a minute)
    /// are forgotten.
    func takeInterval(now: ContinuousClock.Instant = .now) -> Interval {
        state.withLock { state in
            let taken = state.interval
            state.interval = Interval()
            state.early = state.early.filter { now - $0.value.at < .seconds(60) }
            return taken
        }
    }

    /// Jobs enqueued and not final.
    var openCount: Int { state.withLock { $0.open.count } }
    var totalEnqueued: Int { state.withLock { $0.totalEnqueued } }

    /// Waits until every job enqueued is final, or `deadline`; true if they are.
    func waitUntilAllFinal(until deadline: ContinuousClock.Instant) -> Bool {
        state.wait(until: { $0.open.isEmpty }, timeout: max(.zero, deadline - ContinuousClock.now))
    }
}
