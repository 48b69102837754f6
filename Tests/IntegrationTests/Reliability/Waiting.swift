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

extension ChildProcess {
    /// True when the process's main thread blocks or catches SIGTERM (`SigBlk`, `SigCgt` in /proc/PID/status): it
    /// has run its first code (CSignals), so a SIGTERM from now on can no longer take its default action.
    var terminationSignalsHeld: Bool {
        let fields = Self.status(of: pid)
        let bit = UInt64(1) << UInt64(SIGTERM - 1)
        let blocked = fields["SigBlk"].flatMap { UInt64($0, radix: 16) } ?? 0
        let caught = fields["SigCgt"].flatMap { UInt64($0, radix: 16) } ?? 0
        return (blocked | caught) & bit != 0
    }

    /// Waits until `terminationSignalsHeld` (false if the process exits first or `timeout` passes).
    func holdsTerminationSignals(within timeout: Double) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if terminationSignalsHeld { return true }
            if !isRunning { return false }
            await Wait.seconds(0.001)
        } while Date() < deadline
        return terminationSignalsHeld
    }

    /// Waits until the process is stopped (state T in /proc/PID/status), after a SIGSTOP.
    func stopped(within timeout: Double) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        repeat {
            if Self.status(of: pid)["State"]?.hasPrefix("T") == true { return true }
            await Wait.seconds(0.001)
        } while Date() < deadline
        return false
    }

    /// The fields of /proc/PID/status, by name.
    private static func status(of pid: pid_t) -> [String: String] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }
}

extension Harness {
    /// `drain(workers:timeout:_:)` without blocking the calling task's thread: the workers run on threads of their
    /// own and the test polls for their end.
    func drainWithoutBlocking(
        workers count: Int = 1, timeout: Double = 60, _ change: (inout WorkerConfiguration) -> Void = { _ in }
    ) async throws {
        let threads = try startWorkers(count, change)
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !threads.allSatisfy({ $0.wait(seconds: 0) }) {
            if Date() >= deadline {
                throw Self.giveUp(threads, reason: "workers did not drain the queue within \(timeout) s")
            }
            await Wait.seconds(0.05)
        }
        try Self.rethrow(threads)
    }
}
#endif
