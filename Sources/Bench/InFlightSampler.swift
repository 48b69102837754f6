import ThreadSupport

/// Samples how many jobs the worker holds, every `interval`, keeping the highest per second: with the verdicts per
/// second, it shows the ramp up, the steady state and the tail of a run.
final class InFlightSampler: Sendable {
    private struct Samples {
        /// The highest count seen in each second since the start.
        var maxima: [Int] = []
        var stopped = false
    }

    private let samples = ConditionLock(Samples())
    private let thread: DedicatedThread

    init(start: ContinuousClock.Instant, interval: Double, sample: @escaping @Sendable () -> Int) throws {
        thread = try DedicatedThread.start(name: "bench-in-flight") { [samples] in
            repeat {
                let value = sample()
                let second = max(0, Int((ContinuousClock.now - start).seconds))
                samples.withLock { samples in
                    if samples.maxima.count <= second {
                        samples.maxima += Array(repeating: 0, count: second + 1 - samples.maxima.count)
                    }
                    samples.maxima[second] = max(samples.maxima[second], value)
                }
            } while !samples.wait(until: \.stopped, timeout: .seconds(interval))
        }
    }

    /// Stops sampling; returns the highest count seen in each second since `start`.
    func stop() -> [Int] {
        let wasRunning = samples.withLock { samples in
            defer { samples.stopped = true }
            return !samples.stopped
        }
        if wasRunning { thread.join() }
        return samples.withLock { $0.maxima }
    }
}
