import Foundation
import Synchronization
import Testing
import ThreadSupport

/// Runs each test of a suite on a thread of its own instead of Swift's cooperative pool, a few at a time
/// (``TestSlots``).
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
        guard !TestSlots.held else {
            // A test case inside a test that already holds a slot.
            try await runOnOwnThread(test, function)
            return
        }
        await TestSlots.shared.acquire()
        defer { TestSlots.shared.release() }
        try await TestSlots.$held.withValue(true) {
            try await runOnOwnThread(test, function)
        }
    }

    private func runOnOwnThread(_ test: Test, _ function: @Sendable () async throws -> Void) async throws {
        let executor = ThreadExecutor(name: "test: \(test.name)", stackSize: 8 << 20)
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) {
            try await function()
        }
    }
}

/// How many tests on threads of their own run at once. Swift Testing starts every test of the run together; on the
/// cooperative pool, tests that block were held to its width without anyone asking, on threads of their own nothing
/// holds them back, and a hundred tests at once, each with a database, a fake App Store and workers, leave two cores
/// so loaded that workers miss their leases. A test waits for a slot without holding a thread.
final class TestSlots: Sendable {
    /// Twice the cores: most of these tests spend their time waiting on processes, sockets and PostgreSQL.
    static let shared = TestSlots(count: 2 * ProcessInfo.processInfo.activeProcessorCount)

    /// True inside a test that holds a slot.
    @TaskLocal static var held = false

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(free: max(1, count)))
    }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Hands the slot to the test that has waited longest, or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own (see ``OwnThreadTrait``).
    static var ownThread: Self { Self() }
}
