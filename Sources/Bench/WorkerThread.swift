import Dispatch
import Foundation
import Synchronization
import Workers

/// Runs a worker on a thread of its own until `stop()`.
final class WorkerThread: Sendable {
    private let worker: Worker
    private let group = DispatchGroup()
    private let failure = Mutex<(any Error)?>(nil)

    init(_ worker: Worker) {
        self.worker = worker
        group.enter()
        Thread.detachNewThread { [self] in
            defer { group.leave() }
            do {
                try worker.run()
            } catch {
                failure.withLock { $0 = error }
            }
        }
    }

    /// Jobs the worker holds now (claimed, not written yet).
    var jobsInHand: Int { worker.jobsInHand }

    /// Why `run()` ended early, if it did.
    var error: (any Error)? { failure.withLock { $0 } }

    /// Shuts the worker down (jobs in hand get its grace period) and waits for it; idempotent.
    func stop() {
        worker.shutdown()
        group.wait()
    }
}
