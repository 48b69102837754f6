/// Reads Prometheus text format the way a scraper would, for assertions.
struct Exposition {
    let text: String

    /// The value of one series, written as it appears: `name{label="value",…}` or a bare `name`.
    func value(_ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// The lines of one metric family (series and `_bucket`/`_sum`/`_count` of a histogram), without comments.
    func lines(of name: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.hasPrefix(name) && !$0.hasPrefix("#") }
    }

    func type(of name: String) -> String? {
        let line = text.split(separator: "\n").first { $0.hasPrefix("# TYPE \(name) ") }
        return line?.split(separator: " ").last.map(String.init)
    }
}
