import ThreadSupport

/// CPU seconds used so far by each part of a run, read together at one moment.
public struct CPUReading: Sendable, Codable, Equatable {
    /// This process: the worker and the benchmark (and the fake App Store when it runs in this process).
    public var worker: Double
    /// The fake App Store's own process, when it runs in one.
    public var fakeAppStore: Double?
    /// The PostgreSQL server's processes, when their CPU can be read.
    public var postgres: Double?

    /// What each part used from `earlier` to this reading.
    func since(_ earlier: CPUReading) -> CPUReading {
        CPUReading(
            worker: worker - earlier.worker,
            fakeAppStore: fakeAppStore.flatMap { now in earlier.fakeAppStore.map { now - $0 } },
            postgres: postgres.flatMap { now in earlier.postgres.map { now - $0 } }
        )
    }

    /// The reading a fraction `weight` (0…1) of the way from `self` to `later`.
    func interpolated(to later: CPUReading, weight: Double) -> CPUReading {
        func mix(_ a: Double, _ b: Double) -> Double { a + (b - a) * weight }
        return CPUReading(
            worker: mix(worker, later.worker),
            fakeAppStore: fakeAppStore.flatMap { a in later.fakeAppStore.map { mix(a, $0) } },
            postgres: postgres.flatMap { a in later.postgres.map { mix(a, $0) } }
        )
    }
}

/// Readings of the CPU used by the worker, the fake App Store and PostgreSQL, taken every `interval` during the
/// drain, so that the CPU of each phase (whose bounds are known only at the end) can be told afterwards.
struct CPUTimeline: Sendable {
    /// Seconds since the timeline's start, and the reading taken then; in time order.
    var samples: [(seconds: Double, reading: CPUReading)]

    /// The reading at `seconds`, interpolated between the two samples around it; nil outside the samples.
    func reading(at seconds: Double) -> CPUReading? {
        guard let first = samples.first, let last = samples.last, seconds >= first.seconds, seconds <= last.seconds
        else { return nil }
        guard let after = samples.firstIndex(where: { $0.seconds >= seconds }) else { return nil }
        let upper = samples[after]
        guard after > 0, upper.seconds > seconds else { return upper.reading }
        let lower = samples[after - 1]
        let weight = (seconds - lower.seconds) / (upper.seconds - lower.seconds)
        return lower.reading.interpolated(to: upper.reading, weight: weight)
    }

    /// The cores all parts kept busy together in each `step` from `start` to `end` (seconds since the start; the
    /// last step may be shorter); a step outside the samples ends the list.
    func coresBusy(from start: Double, to end: Double, step: Double) -> [Double] {
        guard step > 0, end > start else { return [] }
        var busy: [Double] = []
        var from = start
        while from < end {
            let to = min(from + step, end)
            guard to > from, let used = used(from: from, to: to) else { break }
            busy.append((used.worker + (used.fakeAppStore ?? 0) + (used.postgres ?? 0)) / (to - from))
            from = to
        }
        return busy
    }

    /// The names of the parts read at the first and the last sample: `worker` (this process), then the fake App
    /// Store's process and PostgreSQL when they were read.
    func partsRead(worker: String) -> [String] {
        guard let first = samples.first?.reading, let last = samples.last?.reading else { return [] }
        return [worker]
            + (first.fakeAppStore != nil && last.fakeAppStore != nil ? ["fake App Store"] : [])
            + (first.postgres != nil && last.postgres != nil ? ["PostgreSQL"] : [])
    }

    /// The CPU each part used between two moments (seconds since the start); nil when either is outside the samples.
    func used(from start: Double, to end: Double) -> CPUReading? {
        guard let a = reading(at: start), let b = reading(at: end) else { return nil }
        return b.since(a)
    }
}

/// Takes the readings of a `CPUTimeline` on a thread of its own until stopped.
final class CPUTimelineSampler: Sendable {
    private struct State {
        var samples: [(seconds: Double, reading: CPUReading)] = []
        var stopped = false
    }

    private let state = ConditionLock(State())
    private let thread: DedicatedThread

    init(start: ContinuousClock.Instant, interval: Double, read: @escaping @Sendable () -> CPUReading) throws {
        thread = try DedicatedThread.start(name: "bench-cpu") { [state] in
            repeat {
                let reading = read()
                let seconds = (ContinuousClock.now - start).seconds
                state.withLock { $0.samples.append((seconds, reading)) }
            } while !state.wait(until: \.stopped, timeout: .seconds(interval))
            let reading = read()
            let seconds = (ContinuousClock.now - start).seconds
            state.withLock { $0.samples.append((seconds, reading)) }
        }
    }

    /// Takes one last reading, stops, and returns the timeline.
    func stop() -> CPUTimeline {
        let wasRunning = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        if wasRunning { thread.join() }
        return CPUTimeline(samples: state.withLock { $0.samples })
    }
}
