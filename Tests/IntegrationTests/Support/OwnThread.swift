import Testing
import ThreadSupport

/// Runs each test of a suite on a thread of its own instead of Swift's cooperative pool.
///
/// Swift Testing runs test functions on the cooperative pool, which has as many threads as cores (two here). These
/// tests block for long stretches (libpq calls, pg_ctl, waiting for processes); on the pool they would starve every
/// other test of the run — timing assertions elsewhere then fail — and, the other way round, tests that block the
/// pool would stall these tests' own timing (a worker finishing before the outage it should live through). With a
/// task executor preference the test still runs in its own task (Swift Testing's task-locals, so issues are
/// attributed as usual), but every job of it runs on a dedicated thread.
struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else {
            try await function()
            return
        }
        let executor = try ThreadExecutor(name: test.name)
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) {
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own (see ``OwnThreadTrait``).
    static var ownThread: Self { Self() }
}

/// A task executor with one thread that runs the jobs enqueued on it, in order, until `finish()`.
final class ThreadExecutor: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var finished = false
    }

    private let queue = ConditionLock(Queue())

    init(name: String) throws {
        try DedicatedThread.detached(name: "test: \(name)", stackSize: 8 << 20) { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
    }

    /// Lets the thread end once the jobs enqueued so far have run.
    func finish() {
        queue.withLock { $0.finished = true }
    }

    private enum Next {
        case run(UnownedJob)
        case end
    }

    private func run() {
        while case .run(let job) = queue.wait(for: { queue -> Next? in
            if !queue.jobs.isEmpty { return .run(queue.jobs.removeFirst()) }
            return queue.finished ? .end : nil
        }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
