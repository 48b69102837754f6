import ThreadSupport

/// `Worker.run()` on a thread of its own, for callers that keep theirs: the benchmark and the demo (which show
/// progress meanwhile) and the tests.
public final class WorkerThread: Sendable {
    public let worker: Worker
    /// nil while `run()` runs; then how it ended.
    private let ended = ConditionLock<Result<Void, any Error>?>(nil)

    /// Starts `worker.run()`.
    public init(_ worker: Worker) throws(ThreadError) {
        self.worker = worker
        try DedicatedThread.detached(name: "worker") { [ended] in
            let result = Result { try worker.run() }
            ended.withLock { $0 = result }
        }
    }

    /// Waits up to `seconds` for `run()` to return; true once it has.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        ended.wait(until: { $0 != nil }, timeout: .seconds(seconds))
    }

    /// Waits for `run()` to return.
    public func wait() {
        ended.wait { $0.map { _ in () } }
    }

    /// Asks the worker to stop (no new claims; calls in flight get its shutdown grace) and waits for it to return,
    /// at most `seconds` when given; true once it has. Does nothing once it has returned.
    @discardableResult
    public func stop(waitingUpTo seconds: Double? = nil) -> Bool {
        guard !wait(seconds: 0) else { return true }
        worker.shutdown()
        guard let seconds else {
            wait()
            return true
        }
        return wait(seconds: seconds)
    }

    /// Why `run()` threw, if it did.
    public var error: (any Error)? {
        ended.withLock { ended in
            guard case .failure(let error) = ended else { return nil }
            return error
        }
    }
}
