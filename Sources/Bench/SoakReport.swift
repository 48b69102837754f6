import Foundation

/// The figures of `bench --soak MINUTES`, as printed in the table and in the JSON line.
public struct SoakReport: Sendable, Codable {
    public var minutesAsked: Double
    public var intervalSeconds: Double
    /// Receipts enqueued a second, and notifications stored a second.
    public var rate: Double
    public var notificationRate: Double
    public var appleLatencyMs: Int
    public var appleJitterMs: Int
    /// The client's timeout of one call (a hang becomes a timeout after it).
    public var appleTimeoutSeconds: Double
    /// The fake App Store's random faults, per request (`FaultRates`' names).
    public var faults: [String: Double]
    public var maxInFlight: Int
    public var database: String
    public var cores: Int
    public var minutes: [SoakMinute]
    /// After the last interval, the enqueuer and sender stopped: until every job and notification was final.
    public var drainSeconds: Double
    public var checks: SoakChecks
    public var flatness: [SoakFlatness]

    /// Every series judged flat, and at least one judged.
    public var flat: Bool { !flatness.isEmpty && flatness.allSatisfy(\.flat) }

    public func table() -> String {
        let faultText = faults.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { String(format: "%@ %.1f%%", $0.key, $0.value * 100) }.joined(separator: ", ")
        var rows: [(String, String)] = [
            ("soak", String(
                format: "%.2f min, a line per %.0f s: %.0f receipts/s and %.1f notifications/s (DID_RENEW and "
                    + "ONE_TIME_CHARGE in turn, through receive_notification())", minutesAsked, intervalSeconds, rate,
                notificationRate
            )),
            ("Apple (fake)", String(
                format: "%d ms + 0…%d ms jitter, timeout %.0f s; faults: %@", appleLatencyMs, appleJitterMs,
                appleTimeoutSeconds, faultText.isEmpty ? "none" : faultText
            )),
            ("worker", "one, in this process, MAX_IN_FLIGHT \(maxInFlight); \(cores) cores shared with PostgreSQL"),
            ("database", database),
        ]
        rows.append(("drain", String(format: "%.1f s after the last interval until every job was final", drainSeconds)))
        rows += checks.text
        rows.append(("flat", flatness.isEmpty
            ? "too short to judge (at least three intervals needed, the first being warm-up)"
            : flat ? "yes, every series (last quarter over first quarter, the first interval left out)"
            : "NO: " + flatness.filter { !$0.flat }.map(\.series).joined(separator: ", ")))
        for series in flatness { rows.append(("", series.text)) }
        let lines = [SoakMinute.header] + minutes.map(\.line)
        return BenchTable.render(Array(rows.prefix(4))) + "\n\n" + lines.joined(separator: "\n") + "\n\n"
            + BenchTable.render(Array(rows.dropFirst(4)))
    }

    public func json() -> String { BenchTable.json(self) }
}
