import Synchronization
import ThreadSupport

/// Runs async work to completion for a synchronous caller (a worker's thread, a command), on a thread of its own:
/// neither the cooperative pool (a caller that is itself on that small pool, a test say, would block the very
/// threads the work needs) nor Dispatch's (whose threads may all be blocked callers). The work it runs is rare
/// (a certificate chain validated, every 15 minutes at most per chain), and what it awaits (an OCSP answer)
/// resumes on the same thread.
enum BlockingAsync {
    /// Runs `work` and waits for its result.
    static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let result = ConditionLock<T?>(nil)
        Task(executorPreference: ThreadExecutor.shared) {
            let value = await work()
            result.withLock { $0 = value }
        }
        return result.wait { $0 }
    }
}

/// A task executor that runs its jobs, one at a time, on one dedicated thread started on first use.
final class ThreadExecutor: TaskExecutor, Sendable {
    static let shared = ThreadExecutor()
    private let jobs = ConditionLock<[UnownedJob]>([])

    private init() {
        do {
            try DedicatedThread.detached(name: "signed-data") { [jobs, self] in
                while true {
                    let next = jobs.wait { queue -> [UnownedJob]? in
                        guard !queue.isEmpty else { return nil }
                        defer { queue.removeAll(keepingCapacity: true) }
                        return queue
                    }
                    for job in next { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
                }
            }
        } catch {
            preconditionFailure("cannot start the signed-data thread: \(error)")
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }
}
