import Dispatch
import Synchronization
import Workers

/// Runs a worker on a Dispatch queue of its own, so the demo's main thread can show progress and watch for signals.
final class DemoWorkerThread: Sendable {
    private let worker: Worker
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Mutex<String?>(nil)
    private let done = Mutex(false)

    init(_ worker: Worker) {
        self.worker = worker
        DispatchQueue(label: "receipt-worker.demo.worker").async { [self] in
            do {
                try worker.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            finished.signal()
        }
    }

    /// Waits up to `seconds`; true once the worker has returned.
    func wait(seconds: Double) -> Bool {
        if done.withLock({ $0 }) { return true }
        guard finished.wait(timeout: .now() + seconds) == .success else { return false }
        done.withLock { $0 = true }
        return true
    }

    /// Asks the worker to stop (no new claims; calls in flight get its shutdown grace) and waits for it to return.
    /// Does nothing once it has returned.
    func stop() {
        guard !wait(seconds: 0) else { return }
        worker.shutdown()
        _ = wait(seconds: worker.configuration.shutdownGraceSeconds + 10)
    }

    /// Why `Worker.run()` threw, if it did.
    var error: String? { failure.withLock { $0 } }
}
