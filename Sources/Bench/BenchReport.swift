import Foundation

/// Every figure of one run, as printed in the table and in the JSON line.
public struct BenchReport: Sendable, Codable {
    public var receipts: Int
    public var appleLatencyMs: Int
    public var appleJitterMs: Int
    public var maxInFlight: Int
    public var claimBatch: Int
    public var writeBatch: Int
    public var database: String
    public var fsync: Bool?
    public var cores: Int

    public var enqueueSeconds: Double
    public var enqueuePerSecond: Double

    /// From the first claim to the last verdict written.
    public var drainSeconds: Double
    public var verdictsPerSecond: Double
    /// Second by second from the worker's start.
    public var timeline: Timeline
    public var verified: Int
    public var rejected: Int
    public var dead: Int
    public var retries: Int
    public var lost: Int
    public var ledgerRows: Int

    /// finished_at − created_at of the bulk jobs, from the database.
    var enqueueToVerdict: LatencySummary
    /// How long the worker held each job: claim → outcome written (Apple's latency plus the worker's own).
    var claimToWritten: LatencySummary
    /// Each call to the fake App Store, send to answer, as the client measured it.
    var appleCall: LatencySummary
    /// Enqueue call sent → the worker holds the job, with the worker idle.
    var idlePickup: LatencySummary

    public var peakRSSMebibytes: Double
    /// The fake App Store's own process, when it ran in one.
    public var fakeAppStoreProcessPeakRSSMebibytes: Double?
    public var dbConnectionsWorkerMax: Int
    public var dbConnectionsAllMax: Int
    public var processCPUSeconds: Double
    /// The temporary cluster's backends alive at the end of the drain (the worker's among them).
    public var postgresCPUSeconds: Double?
    public var fakeAppStoreProcessCPUSeconds: Double?
    public var machineBusyCPUSeconds: Double?

    /// The table, one figure a line.
    public func table() -> String {
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        func rate(_ value: Double) -> String { String(format: "%.0f /s", value) }
        let rows: [(String, String)] = [
            ("receipts", "\(receipts) scenario receipts, distinct transaction ids"),
            ("Apple (fake)", "\(appleLatencyMs) ms latency + 0…\(appleJitterMs) ms jitter, "
                + (fakeAppStoreProcessPeakRSSMebibytes == nil ? "in this process" : "in its own process")),
            ("worker", "max in flight \(maxInFlight), claim batch \(claimBatch), write batch \(writeBatch)"),
            ("database", database),
            ("machine", "\(cores) cores, shared with PostgreSQL and the fake App Store"),
            ("enqueue", "\(rate(enqueuePerSecond)) (\(String(format: "%.2f", enqueueSeconds)) s)"),
            ("verified end to end", "\(rate(verdictsPerSecond)) (\(String(format: "%.2f", drainSeconds)) s, first claim → last verdict)"),
            ("verdicts", "verified \(verified), rejected \(rejected), dead \(dead); retries \(retries), lost leases \(lost)"),
            ("ledger rows", "\(ledgerRows)"),
            ("verdicts, second by second", timeline.verdicts.map(String.init).joined(separator: " ")),
            ("jobs in hand, per second (max)", timeline.jobsInHand.map(String.init).joined(separator: " ")),
            ("enqueue → verdict", "p50 \(ms(enqueueToVerdict.p50Milliseconds)), p99 \(ms(enqueueToVerdict.p99Milliseconds)), max \(ms(enqueueToVerdict.maxMilliseconds))"),
            ("claim → written (held)", "p50 \(ms(claimToWritten.p50Milliseconds)), p99 \(ms(claimToWritten.p99Milliseconds)), max \(ms(claimToWritten.maxMilliseconds))"),
            ("Apple call (client's view)", "p50 \(ms(appleCall.p50Milliseconds)), p99 \(ms(appleCall.p99Milliseconds)), max \(ms(appleCall.maxMilliseconds))"),
            ("idle pickup (\(idlePickup.count) jobs)", "p50 \(ms(idlePickup.p50Milliseconds)), p99 \(ms(idlePickup.p99Milliseconds)), max \(ms(idlePickup.maxMilliseconds))"),
            ("peak RSS (VmHWM)", rssLine),
            ("DB connections", "worker max \(dbConnectionsWorkerMax); all in the database max \(dbConnectionsAllMax) (incl. the benchmark's own)"),
            ("CPU during the drain", cpuLine),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }

    private var rssLine: String {
        guard let fake = fakeAppStoreProcessPeakRSSMebibytes else {
            return String(format: "%.0f MiB (worker, fake App Store and benchmark in one process)", peakRSSMebibytes)
        }
        return String(format: "%.0f MiB (worker and benchmark); the fake App Store's process %.0f MiB", peakRSSMebibytes, fake)
    }

    private var cpuLine: String {
        var parts = [String(format: "this process %.1f s", processCPUSeconds)]
        if let fakeAppStoreProcessCPUSeconds {
            parts.append(String(format: "fake App Store process %.1f s", fakeAppStoreProcessCPUSeconds))
        }
        if let postgresCPUSeconds { parts.append(String(format: "PostgreSQL %.1f s", postgresCPUSeconds)) }
        if let machineBusyCPUSeconds {
            parts.append(String(format: "whole machine %.1f s busy of %.1f s", machineBusyCPUSeconds,
                                Double(cores) * drainSeconds))
        }
        return parts.joined(separator: ", ")
    }

    /// The run second by second from the worker's start: verdicts written, and the most jobs held.
    public struct Timeline: Sendable, Codable {
        public var verdicts: [Int]
        public var jobsInHand: [Int]
    }

    /// One line of JSON with every figure.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
