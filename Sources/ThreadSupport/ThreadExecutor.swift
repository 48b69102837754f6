/// A task executor with a POSIX thread of its own: the jobs enqueued on it run there, in order, until `finish()`.
/// For async work that a synchronous caller waits for (a certificate chain validated for a worker's thread, a test
/// body), so that the work holds no thread of the cooperative pool or of Dispatch, and one slow piece of work holds
/// up no other: each executor's jobs run on its own thread only.
///
/// The thread starts with the first job. After `finish()`, it ends as soon as no job is waiting; a job enqueued
/// later still (a child task's last resumption, say) starts a thread again for itself, so nothing enqueued is ever
/// left unrun.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var finished = false
        /// True while a thread is serving the queue.
        var serving = false
    }

    private let queue = ConditionLock(Queue())
    private let name: String
    private let stackSize: Int?

    /// `name`: the thread's, as `top -H` shows it (Linux keeps 15 bytes). `stackSize`: bytes, when the system's
    /// default will not do.
    public init(name: String, stackSize: Int? = nil) {
        self.name = name
        self.stackSize = stackSize
        // The spare thread is started with the first executor, while threads can still be had, not when one
        // cannot (then a second attempt would most likely fail too, and end the process).
        _ = Self.fallback
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let start = queue.withLock { queue in
            queue.jobs.append(job)
            defer { queue.serving = true }
            return !queue.serving
        }
        if start { startThread() }
    }

    /// Lets the thread end once the jobs enqueued so far have run.
    public func finish() {
        queue.withLock { $0.finished = true }
    }

    private func startThread() {
        do {
            try DedicatedThread.detached(name: name, stackSize: stackSize) { [self] in serve() }
        } catch {
            // No thread to be had (the process is at its limit): the jobs run on one shared thread instead, which
            // is slower for everyone but loses nothing.
            queue.withLock { $0.serving = false }
            let jobs = queue.withLock { queue in
                defer { queue.jobs.removeAll() }
                return queue.jobs
            }
            for job in jobs { Self.fallback.enqueue(job, on: self) }
        }
    }

    private enum Next {
        case run([UnownedJob])
        case end
    }

    private func serve() {
        while case .run(let jobs) = queue.wait(for: { queue -> Next? in
            if !queue.jobs.isEmpty {
                defer { queue.jobs.removeAll(keepingCapacity: true) }
                return .run(queue.jobs)
            }
            guard queue.finished else { return nil }
            queue.serving = false
            return .end
        }) {
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }

    /// The thread jobs run on when no thread of their own could be started; started on first use.
    private static let fallback = FallbackThread()

    private final class FallbackThread: Sendable {
        private let jobs = ConditionLock<[(UnownedJob, ThreadExecutor)]>([])

        init() {
            do {
                try DedicatedThread.detached(name: "executor-spare") { [jobs] in
                    while true {
                        let next = jobs.wait { queue -> [(UnownedJob, ThreadExecutor)]? in
                            guard !queue.isEmpty else { return nil }
                            defer { queue.removeAll(keepingCapacity: true) }
                            return queue
                        }
                        for (job, executor) in next { job.runSynchronously(on: executor.asUnownedTaskExecutor()) }
                    }
                }
            } catch {
                preconditionFailure("cannot start a thread for async work: \(error)")
            }
        }

        func enqueue(_ job: UnownedJob, on executor: ThreadExecutor) {
            jobs.withLock { $0.append((job, executor)) }
        }
    }
}
