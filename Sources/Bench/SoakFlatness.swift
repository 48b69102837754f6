import Foundation

/// Whether one series of `bench --soak` stayed flat: the mean of its last quarter over the mean of its first quarter,
/// the first interval (warm-up: connections opened, caches filled, the first retries) left out. Flat: the ratio is at
/// most the series' limit, or the series grew by less than its slack (an absolute amount below which a change is the
/// machine's noise: a few MiB of malloc arenas, a poll's 10 ms and a busy core's scheduling in a p99).
public struct SoakFlatness: Sendable, Codable, Equatable {
    public var series: String
    public var firstQuarter: Double
    public var lastQuarter: Double
    /// lastQuarter / firstQuarter.
    public var ratio: Double
    /// The most the ratio may be for the series to count as flat.
    public var limit: Double
    /// Growth (lastQuarter − firstQuarter) below which the series counts as flat whatever the ratio.
    public var slack: Double
    public var flat: Bool

    /// The series judged: the intervals' values (nil where an interval had none, e.g. no notification applied),
    /// the first left out as warm-up. Nil when fewer than two intervals with a value remain, or the first quarter's
    /// mean is not above 0 (no ratio to take).
    static func judge(_ series: String, _ values: [Double?], limit: Double, slack: Double = 0) -> SoakFlatness? {
        let judged = values.dropFirst().compactMap { $0 }
        guard judged.count >= 2 else { return nil }
        let quarter = max(1, judged.count / 4)
        func mean(_ part: ArraySlice<Double>) -> Double { part.reduce(0, +) / Double(part.count) }
        let first = mean(judged.prefix(quarter))
        let last = mean(judged.suffix(quarter))
        guard first > 0 else { return nil }
        let ratio = last / first
        return SoakFlatness(
            series: series, firstQuarter: first, lastQuarter: last, ratio: ratio, limit: limit, slack: slack,
            flat: ratio <= limit || last - first < slack
        )
    }

    /// The series `bench --soak` judges, with their limits and slacks: memory may grow 10% (or 8 MiB), CPU per job
    /// 25%, the p99s 50% (a p99 with 1–2% of calls retried is as noisy as the retries' timing), or 50 ms.
    static func judge(_ minutes: [SoakMinute]) -> [SoakFlatness] {
        [
            judge("worker RSS (MiB)", minutes.map(\.rssMebibytes), limit: 1.10, slack: 8),
            judge("worker CPU per job (µs)", minutes.map(\.workerCPUMicrosecondsPerJob), limit: 1.25),
            judge("PostgreSQL CPU per job (µs)", minutes.map(\.postgresCPUMicrosecondsPerJob), limit: 1.25),
            judge("enqueue → verdict p99 (ms)", minutes.map(\.enqueueToVerdictP99Milliseconds), limit: 1.5, slack: 50),
            judge(
                "notification arrival → applied p99 (ms)", minutes.map(\.arrivalToAppliedP99Milliseconds), limit: 1.5,
                slack: 50
            ),
        ].compactMap { $0 }
    }

    var text: String {
        String(
            format: "%@ %.1f → %.1f, ratio %.2f (limit %.2f%@): %@", series, firstQuarter, lastQuarter, ratio, limit,
            slack > 0 ? String(format: " or +%.0f", slack) : "", flat ? "flat" : "GREW"
        )
    }
}
