import Foundation
import ReceiptQueue
import ThreadSupport
import Workers

/// Collects what the worker reports through `WorkerEvents`: when the first bulk job was claimed, when the last
/// verdict was written, how many bulk jobs are final, and when each probe job was claimed.
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class VerdictRecorder: @unchecked Sendable {
    struct Counts: Sendable {
        var final = 0
        var verified = 0
        var rejected = 0
        var dead = 0
        /// Retry outcomes written (each costs an attempt and a second Apple call later).
        var retries = 0
        /// Outcomes refused by the lease guard.
        var lost = 0
    }

    private let condition = NSCondition()
    private var bulkIds: Set<Int64> = []
    private var counts = Counts()
    private var firstClaim: ContinuousClock.Instant?
    private var lastVerdict: ContinuousClock.Instant?
    private var probeClaims: [Int64: ContinuousClock.Instant] = [:]
    /// When each bulk verdict was written.
    private var verdictTimes: [ContinuousClock.Instant] = []
    /// How long each bulk job was held, claim to written, in microseconds.
    private var heldMicroseconds: [Int64] = []
    private var callMicroseconds: [Int64] = []
    /// The last Apple call the worker started (handed to the transport), and the last answer the client read.
    private var lastCallStarted: ContinuousClock.Instant?
    private var lastCallAnswered: ContinuousClock.Instant?
    private var recordingProbes = false

    /// The hooks to give the worker.
    var events: WorkerEvents {
        WorkerEvents(
            appleCall: { [self] call in
                let now = ContinuousClock.now
                let started = now - .nanoseconds(Int64(call.seconds * 1e9))
                condition.lock()
                callMicroseconds.append(Int64(call.seconds * 1e6))
                lastCallStarted = max(lastCallStarted ?? started, started)
                lastCallAnswered = now
                condition.unlock()
            },
            jobWritten: { [self] completion, _, seconds in
                record(completion, heldSeconds: seconds)
            }
        )
    }

    /// How long each call to the fake App Store took, as the App Store client measured it, in microseconds.
    var callTimes: [Int64] {
        condition.lock()
        defer { condition.unlock() }
        return callMicroseconds
    }

    /// The jobs of the throughput phase; set before the worker starts.
    func expect(bulk ids: [Int64]) {
        condition.lock()
        bulkIds = Set(ids)
        condition.unlock()
    }

    func startRecordingProbes() {
        condition.lock()
        recordingProbes = true
        condition.unlock()
    }

    private func record(_ completion: JobStore.Completion, heldSeconds: Double) {
        let now = ContinuousClock.now
        let claimedAt = now - .nanoseconds(Int64(heldSeconds * 1e9))
        condition.lock()
        defer { condition.unlock() }
        if bulkIds.contains(completion.jobId) {
            firstClaim = min(firstClaim ?? claimedAt, claimedAt)
            switch completion.state {
            case .verified: counts.verified += 1
            case .rejected: counts.rejected += 1
            case .dead: counts.dead += 1
            case .retry: counts.retries += 1
            case .lost: counts.lost += 1
            }
            if completion.state.isFinal {
                counts.final += 1
                lastVerdict = now
                verdictTimes.append(now)
                heldMicroseconds.append(Int64(heldSeconds * 1e6))
                if counts.final == bulkIds.count { condition.broadcast() }
            }
        } else if recordingProbes {
            probeClaims[completion.jobId] = min(probeClaims[completion.jobId] ?? claimedAt, claimedAt)
            condition.broadcast()
        }
    }

    /// Waits until every bulk job is final or `deadline` passes, calling `progress` about once a second.
    func waitForBulk(until deadline: ContinuousClock.Instant, progress: (Counts) -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while counts.final < bulkIds.count {
            if ContinuousClock.now >= deadline { return false }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 1))
            progress(counts)
        }
        return true
    }

    var bulkCounts: Counts {
        condition.lock()
        defer { condition.unlock() }
        return counts
    }

    /// From the first bulk claim to the last bulk verdict.
    var bulkSpan: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)? {
        condition.lock()
        defer { condition.unlock() }
        guard let firstClaim, let lastVerdict else { return nil }
        return (firstClaim, lastVerdict)
    }

    /// The last Apple call started by the worker (handed to the transport) and the last answer read, so far.
    var callSpan: (lastStarted: ContinuousClock.Instant, lastAnswered: ContinuousClock.Instant)? {
        condition.lock()
        defer { condition.unlock() }
        guard let lastCallStarted, let lastCallAnswered else { return nil }
        return (lastCallStarted, lastCallAnswered)
    }

    /// Claim → written of each bulk job, in microseconds.
    var heldTimes: [Int64] {
        condition.lock()
        defer { condition.unlock() }
        return heldMicroseconds
    }

    /// Bulk verdicts written in each second after `start`.
    func verdictsPerSecond(from start: ContinuousClock.Instant) -> [Int] {
        condition.lock()
        defer { condition.unlock() }
        var buckets: [Int] = []
        for time in verdictTimes {
            let second = max(0, Int((time - start).seconds))
            if buckets.count <= second { buckets += Array(repeating: 0, count: second + 1 - buckets.count) }
            buckets[second] += 1
        }
        return buckets
    }

    /// Waits until the probe jobs in `ids` have been written (or `deadline`) and returns their claim times.
    func probeClaims(_ ids: [Int64], until deadline: ContinuousClock.Instant) -> [Int64: ContinuousClock.Instant] {
        condition.lock()
        defer { condition.unlock() }
        while !ids.allSatisfy({ probeClaims[$0] != nil }) && ContinuousClock.now < deadline {
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.2))
        }
        return probeClaims
    }
}
