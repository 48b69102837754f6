import Foundation
import ReceiptQueue

/// What the worker's loops share: the jobs in hand, outcomes waiting to be written, and the stop flags.
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class WorkerState: @unchecked Sendable {
    struct Held {
        var job: ClaimedJob
        var claimedAt: ContinuousClock.Instant
    }

    private let condition = NSCondition()
    private var held: [Int64: Held] = [:]
    private var outcomes: [JobOutcome] = []
    private var stopping = false
    private var stopDeadline: ContinuousClock.Instant?
    private var claimingDone = false
    private var drained = false

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    // MARK: Jobs in hand

    func hold(_ jobs: [ClaimedJob]) {
        let now = ContinuousClock.now
        locked { for job in jobs { held[job.id] = Held(job: job, claimedAt: now) } }
    }

    var heldCount: Int { locked { held.count } }
    var heldLeases: [Lease] { locked { held.values.map(\.job.lease) } }

    /// Removes written jobs and wakes the claim loop (there is room again).
    func finished(_ ids: [Int64]) -> [Int64: Held] {
        locked {
            var removed: [Int64: Held] = [:]
            for id in ids { removed[id] = held.removeValue(forKey: id) }
            condition.broadcast()
            return removed
        }
    }

    /// Forgets every job in hand (after they were released) and returns their leases.
    func dropAll() -> [Lease] {
        locked {
            let leases = held.values.map(\.job.lease)
            held.removeAll()
            outcomes.removeAll()
            condition.broadcast()
            return leases
        }
    }

    // MARK: Outcomes

    func submit(_ outcome: JobOutcome) {
        locked {
            outcomes.append(outcome)
            condition.broadcast()
        }
    }

    /// Waits for outcomes to write; returns an empty batch when the writer should stop (claiming done, nothing
    /// held) or at `timeout`. With fewer than `gather` ready while answers for other jobs in hand are still to come,
    /// waits up to `linger` more for a fuller batch: each statement has a fixed cost, and answers that trickle in
    /// would otherwise be written a few at a time.
    func takeOutcomes(max: Int, timeout: Double, gather: Int = 1, linger: Double = 0) -> [JobOutcome] {
        locked {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while outcomes.isEmpty && !(claimingDone && held.isEmpty) {
                if !condition.wait(until: deadline) { break }
            }
            if !outcomes.isEmpty, linger > 0 {
                let lingerDeadline = Date(timeIntervalSinceNow: linger)
                while outcomes.count < gather && held.count > outcomes.count && !stopping {
                    if !condition.wait(until: lingerDeadline) { break }
                }
            }
            let batch = Array(outcomes.prefix(max))
            outcomes.removeFirst(batch.count)
            return batch
        }
    }

    /// Waits until fewer than `limit` jobs are in hand, the worker stops, or `timeout` passes. When that room is
    /// under `gather` (the worker is nearly full and jobs are finishing one by one), waits up to `linger` more for
    /// room to claim a fuller batch; an idle or half-busy worker has room at once and does not wait.
    func waitForRoom(limit: Int, timeout: Double, gather: Int = 1, linger: Double = 0) {
        locked {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while held.count >= limit && !stopping {
                if !condition.wait(until: deadline) { break }
            }
            guard linger > 0, held.count < limit, limit - held.count < gather else { return }
            let lingerDeadline = Date(timeIntervalSinceNow: linger)
            while limit - held.count < gather && !stopping {
                if !condition.wait(until: lingerDeadline) { break }
            }
        }
    }

    // MARK: Stopping

    func stop(grace: Double) {
        locked {
            if !stopping {
                stopping = true
                stopDeadline = .now + .milliseconds(Int64(grace * 1000))
            }
            condition.broadcast()
        }
    }

    var isStopping: Bool { locked { stopping } }

    /// A drain is complete: every job is final. Stops the worker like a shutdown with nothing in hand.
    func markDrained() {
        locked {
            drained = true
            stopping = true
            condition.broadcast()
        }
    }

    var isDrained: Bool { locked { drained } }
    var deadlinePassed: Bool { locked { stopDeadline.map { ContinuousClock.now >= $0 } ?? false } }

    func claimLoopEnded() {
        locked {
            claimingDone = true
            condition.broadcast()
        }
    }

    var everythingWritten: Bool { locked { claimingDone && held.isEmpty && outcomes.isEmpty } }
}
