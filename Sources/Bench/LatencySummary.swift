import Histogram

/// Percentiles of a set of durations, recorded in microseconds into an HdrHistogram (3 significant digits).
struct LatencySummary: Sendable, Codable {
    var count: Int
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var maxMilliseconds: Double

    init(microseconds values: [Int64]) {
        var histogram = Histogram<UInt64>(
            lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three
        )
        histogram.autoResize = true
        for value in values { _ = histogram.record(UInt64(max(1, value))) }
        count = values.count
        p50Milliseconds = values.isEmpty ? 0 : Double(histogram.valueAtPercentile(50)) / 1000
        p99Milliseconds = values.isEmpty ? 0 : Double(histogram.valueAtPercentile(99)) / 1000
        maxMilliseconds = values.isEmpty ? 0 : Double(histogram.max) / 1000
    }

    /// "p50 1.2 ms, p99 3.4 ms, max 5.6 ms"
    var text: String {
        String(format: "p50 %.1f ms, p99 %.1f ms, max %.1f ms", p50Milliseconds, p99Milliseconds, maxMilliseconds)
    }
}
