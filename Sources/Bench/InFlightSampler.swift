import Foundation
import Synchronization

/// Samples how many jobs the worker holds, every `interval`, keeping the highest per second: with the verdicts per
/// second, it shows the ramp up, the steady state and the tail of a run.
final class InFlightSampler: Sendable {
    private let start: ContinuousClock.Instant
    private let maxima = Mutex<[Int]>([])
    private let running = Mutex(true)
    private let done = DispatchSemaphore(value: 0)

    init(start: ContinuousClock.Instant, interval: Double, sample: @escaping @Sendable () -> Int) {
        self.start = start
        let thread = Thread { [self] in
            defer { done.signal() }
            while running.withLock({ $0 }) {
                let value = sample()
                let second = max(0, Int((ContinuousClock.now - start).seconds))
                maxima.withLock { maxima in
                    if maxima.count <= second { maxima += Array(repeating: 0, count: second + 1 - maxima.count) }
                    maxima[second] = max(maxima[second], value)
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.name = "bench-in-flight"
        thread.start()
    }

    /// Stops sampling; returns the highest count seen in each second since `start`.
    func stop() -> [Int] {
        let wasRunning = running.withLock { running in
            defer { running = false }
            return running
        }
        if wasRunning { done.wait() }
        return maxima.withLock { $0 }
    }
}
