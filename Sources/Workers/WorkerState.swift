import Foundation
import ReceiptQueue

/// What the worker's loops share: the jobs in hand, outcomes waiting to be written, and the stop flags.
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class WorkerState: @unchecked Sendable {
    /// A class, so the dictionary of jobs in hand moves pointers, not whole jobs, when it reorganises itself on
    /// every removal (thousands per second). Mutated only under `condition`, like everything here.
    final class Held: @unchecked Sendable {
        let job: ClaimedJob
        let claimedAt: ContinuousClock.Instant
        /// Its outcome was submitted (it waits for the writer, or is being written).
        var answered = false

        init(job: ClaimedJob, claimedAt: ContinuousClock.Instant) {
            self.job = job
            self.claimedAt = claimedAt
        }
    }

    private let condition = NSCondition()
    private var held: [Int64: Held] = [:]
    /// Jobs in hand whose outcome is known (waiting for the writer, or being written): they hold no Apple call.
    private var answered = 0
    private var outcomes: [JobOutcome] = []
    /// Jobs whose outcome a writer has taken and not yet reported `finished`: at the shutdown deadline `dropAll`
    /// leaves them to that writer (with several writers, one may reach the deadline while another is mid-write).
    private var writing: Set<Int64> = []
    /// Jobs `dropAll` took out of hand whose release the writer has not finished: still this worker's until then.
    private var givingBack: Set<Int64> = []
    /// A claim statement is out (`claiming(_:)`): what it claims is not in hand until it answers.
    private var claimOut = false
    private var stopping = false
    private var stopDeadline: ContinuousClock.Instant?
    private var claimingDone = false
    private var drained = false
    /// The jobs in hand were given back at the shutdown deadline (`dropAll`): the writer has stopped, so nothing
    /// may be held or submitted from then on.
    private var released = false

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    // MARK: Jobs in hand

    /// Holds claimed jobs; false (holding none) once the jobs in hand were given back at the shutdown deadline: a
    /// claim that was under way then must give its jobs back itself, as no writer is left to write or release them.
    func hold(_ jobs: [ClaimedJob]) -> Bool {
        let now = ContinuousClock.now
        return locked {
            guard !released else { return false }
            for job in jobs { held[job.id] = Held(job: job, claimedAt: now) }
            return true
        }
    }

    var heldCount: Int { locked { held.count } }
    /// Jobs in hand still waiting for Apple (or for their call to start).
    var inFlightCount: Int { locked { held.count - answered } }
    var heldLeases: [Lease] { locked { held.values.map(\.job.lease) } }

    /// Removes written jobs and wakes the claim loop (there is room again).
    func finished(_ ids: [Int64]) -> [Int64: Held] {
        locked {
            var removed: [Int64: Held] = [:]
            for id in ids {
                writing.remove(id)
                guard let job = held.removeValue(forKey: id) else { continue }
                removed[id] = job
                if job.answered { answered -= 1 }
            }
            condition.broadcast()
            return removed
        }
    }

    /// Forgets every job in hand and returns the leases to release, but for those a writer is writing now: their
    /// verdicts are written (or, should the write fail, left to their leases) by that writer.
    func dropAll() -> [Lease] {
        locked {
            let leases = held.values.filter { !writing.contains($0.job.id) }.map(\.job.lease)
            givingBack = Set(leases.map(\.jobId))
            held.removeAll()
            answered = 0
            outcomes.removeAll()
            released = true
            condition.broadcast()
            return leases
        }
    }

    /// The release of the jobs `dropAll` returned is over (done, or left to their leases).
    func gaveBack() {
        locked { givingBack.removeAll() }
    }

    /// The jobs in hand now, with those a writer is writing and those being given back (still this worker's until
    /// the database has them).
    /// Runs `claim` (a claim statement) marked as out, for `inHand`.
    func claiming<T>(_ claim: () -> T) -> T {
        locked { claimOut = true }
        defer { locked { claimOut = false } }
        return claim()
    }

    var inHand: JobsInHand {
        locked {
            JobsInHand(
                jobIds: Set(held.keys).union(writing).union(givingBack).sorted(), writingIds: writing.sorted(),
                claimInFlight: claimOut
            )
        }
    }

    // MARK: Outcomes

    /// Queues an outcome for the writer. One for a job no longer in hand (given back at the shutdown deadline while
    /// its call was still out) is dropped: the writer has stopped, and the job's lease is no longer this worker's.
    func submit(_ outcome: JobOutcome) {
        locked {
            guard let job = held[outcome.lease.jobId] else { return }
            outcomes.append(outcome)
            if !job.answered {
                job.answered = true
                answered += 1
            }
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
            return takeForWriting(max)
        }
    }

    /// The first `max` outcomes, marked as being written. Called with the lock held.
    private func takeForWriting(_ max: Int) -> [JobOutcome] {
        let batch = Array(outcomes.prefix(max))
        outcomes.removeFirst(batch.count)
        for outcome in batch { writing.insert(outcome.lease.jobId) }
        return batch
    }

    /// For an overflow writer: up to `max` outcomes once at least `backlog` wait (the first writer is busy writing);
    /// an empty batch at `timeout`, or at once when the writers should stop (claiming done, nothing held).
    func takeBacklog(max: Int, backlog: Int, timeout: Double) -> [JobOutcome] {
        locked {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while outcomes.count < backlog && !(claimingDone && held.isEmpty) {
                if !condition.wait(until: deadline) { break }
            }
            guard outcomes.count >= backlog else { return [] }
            return takeForWriting(max)
        }
    }

    /// How many jobs may be claimed now: up to `limit` Apple calls in flight, and none while `backlog` or more
    /// answered jobs wait for the writer (a slow database then slows claiming down instead of piling up outcomes).
    private func room(limit: Int, backlog: Int) -> Int {
        answered >= backlog ? 0 : max(0, limit - (held.count - answered))
    }

    /// The room to claim (see `room`), once there is some, the worker stops, or `timeout` passes. When that room is
    /// under `gather` (the worker is nearly full and calls are finishing one by one), waits up to `linger` more for
    /// room to claim a fuller batch; an idle or half-busy worker has room at once and does not wait.
    func waitForRoom(limit: Int, backlog: Int, timeout: Double, gather: Int = 1, linger: Double = 0) -> Int {
        locked {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while room(limit: limit, backlog: backlog) == 0 && !stopping {
                if !condition.wait(until: deadline) { break }
            }
            let available = room(limit: limit, backlog: backlog)
            guard linger > 0, available > 0, available < gather else { return available }
            let lingerDeadline = Date(timeIntervalSinceNow: linger)
            while room(limit: limit, backlog: backlog) < gather && !stopping {
                if !condition.wait(until: lingerDeadline) { break }
            }
            return room(limit: limit, backlog: backlog)
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

    /// Sleeps up to `seconds`, or until the worker stops.
    func waitForStop(seconds: Double) {
        locked {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while !stopping {
                if !condition.wait(until: deadline) { break }
            }
        }
    }

    /// Sleeps up to `seconds`, or until the worker holds no job (at once if it holds none) or stops: a drain's
    /// last verdict is noticed when it is written, not at the next tick.
    func waitForEmptyHands(seconds: Double) {
        locked {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while !stopping && !held.isEmpty {
                if !condition.wait(until: deadline) { break }
            }
        }
    }

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
