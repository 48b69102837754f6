import Foundation
import Logging
import ThreadSupport
import Workers

/// Bounds how long `work` takes to stop after SIGTERM or SIGINT (SHUTDOWN_TIMEOUT_SECONDS). A graceful stop waits
/// for the database: the last verdicts' commit, the jobs given back. A database that never answers (a server
/// stopped, a network that drops packets without a reset) would hold the process forever, and the service manager
/// would kill it without a word. At the timeout this logs what the worker abandons and ends the process (exit 1):
/// the abandoned jobs' leases expire and the scheduler rescues them; a verdict whose commit was not acknowledged was
/// either committed or is verified again, its credit kept single by the ledger's keys.
final class ShutdownTimeout: Sendable {
    private struct State {
        /// When the first signal came.
        var signalled: ContinuousClock.Instant?
        var seconds: Double?
        var worker: Worker?
    }

    private let state = ConditionLock(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// The bound, once the configuration is read (a signal may come before).
    func configure(seconds: Double) {
        state.withLock { $0.seconds = seconds }
    }

    /// The worker whose jobs in hand are logged at the timeout.
    func watch(_ worker: Worker) {
        state.withLock { $0.worker = worker }
    }

    /// A stop was asked for: the first call starts the clock, on a thread of its own.
    func begin() {
        let first = state.withLock { state in
            guard state.signalled == nil else { return false }
            state.signalled = .now
            return true
        }
        guard first else { return }
        do {
            try DedicatedThread.detached(name: "stop-timeout") { [self] in expire() }
        } catch {
            logger.error("cannot bound the shutdown: no thread for its timeout", metadata: ["error": "\(error)"])
        }
    }

    /// Sleeps until the timeout (the process normally exits before), then logs what is abandoned and exits 1.
    private func expire() {
        let deadline = state.wait { state in
            state.seconds.flatMap { seconds in state.signalled.map { $0 + .milliseconds(Int64(seconds * 1000)) } }
        }
        let remaining = deadline - .now
        if remaining > .zero { Thread.sleep(forTimeInterval: remaining.seconds) }
        let (seconds, worker) = state.withLock { ($0.seconds ?? 0, $0.worker) }
        let inHand = worker?.heldJobs ?? JobsInHand()
        logger.error(
            "\(Self.abandoning)",
            metadata: [
                "timeout_s": "\(seconds)", "jobs_in_hand": "\(inHand.jobIds.count)",
                "job_ids": "\(Self.listed(inHand.jobIds))",
                "verdicts_unacknowledged": "\(inHand.writingIds.count)",
                "unacknowledged_job_ids": "\(Self.listed(inHand.writingIds))",
                // Jobs a claim still unanswered took, if the database committed it, are unknown here.
                "claim_in_flight": "\(inHand.claimInFlight)",
            ]
        )
        // Not exit(): nothing may run now that could wait for the threads stuck on the database.
        _exit(1)
    }

    static let abandoning = "could not stop within SHUTDOWN_TIMEOUT_SECONDS (the database does not answer); exiting, "
        + "the jobs in hand left to their leases: the scheduler rescues them when the leases expire"

    /// Up to 100 ids, comma separated, then how many more.
    static func listed(_ ids: [Int64]) -> String {
        let shown = ids.prefix(100).map(String.init).joined(separator: ",")
        return ids.count > 100 ? shown + " and \(ids.count - 100) more" : shown
    }
}
