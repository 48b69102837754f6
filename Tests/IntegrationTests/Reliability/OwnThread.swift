import Foundation
import Testing

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
        let executor = ThreadExecutor(name: test.name)
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
/// `@unchecked Sendable`: `jobs` and `finished` are touched only while `condition` is locked.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = "test: \(name)"
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once the jobs enqueued so far have run.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
