import Synchronization

/// One labelled metric: the swift-metrics handle for each set of label values, made on first use and kept, so
/// recording an event is one dictionary lookup. The number of label sets is capped: past `maxSeries`, new values
/// are recorded under "other", so an unexpected value (an unknown status) cannot grow the scrape without bound.
final class MetricFamily<Metric: Sendable>: Sendable {
    let labelNames: [String]
    private let maxSeries: Int
    private let make: @Sendable ([(String, String)]) -> Metric
    private let made = Mutex<[[String]: Metric]>([:])

    init(labels: [String], maxSeries: Int = 200, make: @escaping @Sendable ([(String, String)]) -> Metric) {
        self.labelNames = labels
        self.maxSeries = maxSeries
        self.make = make
    }

    /// The metric for these label values, in the order of `labelNames`.
    func callAsFunction(_ values: String...) -> Metric {
        made.withLock { made in
            var values = values
            if let metric = made[values] { return metric }
            if made.count >= maxSeries { values = values.map { _ in "other" } }
            if let metric = made[values] { return metric }
            let metric = make(Array(zip(labelNames, values)))
            made[values] = metric
            return metric
        }
    }
}
