#if os(Linux)
import Foundation
import Logging
import Workers

/// Waiting without holding a thread of Swift's cooperative pool. Swift Testing runs test functions on that pool
/// (as many threads as cores); a test that sleeps or waits for a process on it for a minute starves every other
/// test of the run, async ones included (their deadlines then fail). These tests are async and wait here.
enum Wait {
    static func seconds(_ seconds: Double) async {
        try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
    }
}

extension ChildProcess {
    /// The exit status (128 + the signal number if a signal ended it), or nil if it still runs after `timeout`.
    func exit(within timeout: Double) async -> Int32? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if let status = wait(timeout: 0) { return status }
            await Wait.seconds(0.03)
        } while Date() < deadline
        return wait(timeout: 0)
    }

    /// The first output line containing `text`, waiting up to `timeout` for it (nil if the process exits first).
    func line(containing text: String, within timeout: Double) async -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if let line = output.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            if !isRunning { return nil }
            await Wait.seconds(0.03)
        } while Date() < deadline
        return nil
    }
}

extension Harness {
    /// `drain(workers:timeout:_:)` without blocking the calling task's thread: the workers run on Dispatch threads
    /// and the test polls for their end.
    func drainWithoutBlocking(
        workers count: Int = 1, timeout: Double = 60, _ change: (inout WorkerConfiguration) -> Void = { _ in }
    ) async throws {
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        let engines = (0..<count).map { _ in
            Worker(configuration: Self.configuration(change), databaseURL: databaseURL, client: client, logger: logger)
        }
        let group = DispatchGroup()
        for engine in engines {
            DispatchQueue.global().async(group: group) { try? engine.run() }
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while group.wait(timeout: .now()) == .timedOut {
            if Date() >= deadline {
                engines.forEach { $0.shutdown() }
                _ = group.wait(timeout: .now() + 10)
                throw TestSetupError("workers did not drain the queue within \(timeout) s")
            }
            await Wait.seconds(0.05)
        }
    }
}
#endif
