import FakeAppStore
import Foundation
import JSONText

/// Every figure of one run, as printed in the table and in the JSON line.
public struct BenchReport: Sendable, Codable {
    public var receipts: Int
    /// The receipts' (or signed transactions') size, on average, in bytes.
    public var inputBytes: Int
    /// "receipts" or "signed transactions": what the jobs carried.
    public var source: String
    public var appleLatencyMs: Int
    public var appleJitterMs: Int
    public var maxInFlight: Int
    public var claimBatch: Int
    public var writeBatch: Int
    /// WRITE_CONNECTIONS: the write connection and the overflow writers.
    public var writeConnections: Int
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
    /// Where the drain's time went; nil when the transport saw no request.
    public var phases: Phases?
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

    /// Whether the fake App Store served TLS.
    public var appleTLS: Bool
    /// Responses from the fake App Store per HTTP version ("HTTP/2", "HTTP/1.1").
    public var appleHTTPVersions: [String: Int]
    /// The most sockets the worker held open to the fake App Store at once.
    public var appleSocketsPeak: Int
    /// Sockets (connections) the worker opened to the fake App Store in all.
    public var appleSocketsOpened: Int

    public var peakRSSMebibytes: Double
    /// This process's resident set just before the worker started: the benchmark's own receipts, the fake App Store
    /// when it runs in this process, and the libraries. The peak above it is the worker's.
    public var rssAtWorkerStartMebibytes: Double
    /// With `--settle-seconds`: the resident set that long after the last verdict (`settledSeconds`), the worker idle.
    public var settledRSSMebibytes: Double?
    public var settledSeconds: Double?
    /// The fake App Store's own process, when it ran in one.
    public var fakeAppStoreProcessPeakRSSMebibytes: Double?
    /// What the fake App Store saw of the drain (its `/stats`); nil when it could not be read.
    public var appleStandIn: AppleStandIn?
    public var dbConnectionsWorkerMax: Int
    public var dbConnectionsAllMax: Int
    public var processCPUSeconds: Double
    /// The server's processes during the drain (the worker's backends among them): the temporary cluster's, or with
    /// `--postgres-pid` DATABASE_URL's server on this machine; nil otherwise.
    public var postgresCPUSeconds: Double?
    public var fakeAppStoreProcessCPUSeconds: Double?
    public var machineBusyCPUSeconds: Double?
    /// What PostgreSQL wrote during the drain.
    public var databaseWork: DatabaseWork
    /// `--prefill`: the finished jobs the tables held before the run, and the seconds it took to make them.
    public var prefillRows: Int = 0
    public var prefillSeconds: Double = 0
    /// What the operator's views cost after the run (`OperatorViews`), in milliseconds, in the order asked.
    public var viewMilliseconds: [OperatorViews.Timing] = []

    /// The table, one figure a line.
    public func table() -> String {
        func rate(_ value: Double, _ seconds: Double, _ note: String = "") -> String {
            String(format: "%.0f /s (%.2f s%@)", value, seconds, note)
        }
        func numbers(_ values: [Int]) -> String { values.map(String.init).joined(separator: " ") }
        let fakeWhere = fakeAppStoreProcessPeakRSSMebibytes == nil ? "in this process" : "in its own process"
        let rows: [(String, String)] = [
            (source, "\(receipts) \(source == "receipts" ? "scenario receipts" : "JWS signed by a test chain") of "
                + "\(inputBytes) bytes on average, distinct transaction ids"),
            ("Apple (fake)", "\(appleLatencyMs) ms latency + 0…\(appleJitterMs) ms jitter, \(fakeWhere)"),
            ("worker", "max in flight \(maxInFlight), claim batch \(claimBatch), write batch \(writeBatch), "
                + "write connections \(writeConnections)"),
            ("database", database),
            ("tables before the run", prefillRows == 0
                ? "empty"
                : String(format: "%d finished jobs and their history (--prefill; made in %.0f s)", prefillRows, prefillSeconds)),
            ("machine", "\(cores) cores, shared by the worker, the fake App Store and a local PostgreSQL"),
            ("enqueue", rate(enqueuePerSecond, enqueueSeconds)),
            ("verified end to end", rate(verdictsPerSecond, drainSeconds, ", first claim → last verdict")),
            ("verdicts", "verified \(verified), rejected \(rejected), dead \(dead); retries \(retries), "
                + "lost leases \(lost)"),
            ("ledger rows", "\(ledgerRows)"),
            ("phases of the drain", phases?.text ?? "no Apple calls"),
            ("CPU by phase", phases?.cpuText ?? "not sampled"),
            ("verdicts, second by second", numbers(timeline.verdicts)),
            ("jobs in hand, per second (max)", numbers(timeline.jobsInHand)),
            (String(format: "cores busy, per %g s", timeline.coresBusyStep), timeline.coresBusy.isEmpty
                ? "not sampled"
                : timeline.coresBusy.map { String(format: "%.1f", $0) }.joined(separator: " ")
                    + " (\(timeline.coresBusyParts.joined(separator: ", ")); from the first claim)"),
            ("enqueue → verdict", enqueueToVerdict.text),
            ("claim → written (held)", claimToWritten.text),
            ("Apple call (client's view)", appleCall.text),
            ("idle pickup (\(idlePickup.count) jobs)", idlePickup.text),
            ("connections to Apple (fake)", connectionsLine),
            ("Apple's stand-in (fake)", appleStandIn?.text ?? "its statistics could not be read"),
            ("peak RSS (VmHWM)", rssLine),
        ] + settledRow + [
            ("DB connections", "worker max \(dbConnectionsWorkerMax); all in the database max \(dbConnectionsAllMax) "
                + "(incl. the benchmark's own)"),
            ("CPU during the drain", cpuLine),
            ("database writes, per job", databaseWorkLine),
            ("operator views (ms)", viewMilliseconds.isEmpty
                ? "not read"
                : viewMilliseconds.map { String(format: "%@ %.1f", $0.name, $0.milliseconds) }.joined(separator: ", ")),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }

    private var connectionsLine: String {
        let versions = appleHTTPVersions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            .joined(separator: ", ")
        return "\(versions.isEmpty ? "no responses" : versions) responses, \(appleTLS ? "TLS" : "plain text"); "
            + "sockets open at most \(appleSocketsPeak), opened \(appleSocketsOpened) in all"
    }

    private var settledRow: [(String, String)] {
        guard let settledRSSMebibytes, let settledSeconds else { return [] }
        return [(
            "RSS after the drain",
            String(format: "%.0f MiB, %.0f s after the last verdict (the worker idle)", settledRSSMebibytes, settledSeconds)
        )]
    }

    private var rssLine: String {
        guard let fake = fakeAppStoreProcessPeakRSSMebibytes else {
            return String(
                format: "%.0f MiB (worker, fake App Store and benchmark in one process; "
                    + "%.0f MiB as the worker started)",
                peakRSSMebibytes, rssAtWorkerStartMebibytes
            )
        }
        return String(
            format: "%.0f MiB (worker and benchmark; %.0f MiB as the worker started); "
                + "the fake App Store's process %.0f MiB",
            peakRSSMebibytes, rssAtWorkerStartMebibytes, fake
        )
    }

    private var databaseWorkLine: String {
        let jobs = Double(max(receipts, 1))
        return String(
            format: "%.0f bytes of WAL, %.3f write transactions (during the drain)",
            Double(databaseWork.walBytes) / jobs, Double(databaseWork.writeTransactions) / jobs
        )
    }

    private var cpuLine: String {
        var parts = [String(format: "this process %.1f s", processCPUSeconds)]
        if let fakeAppStoreProcessCPUSeconds {
            parts.append(String(format: "fake App Store process %.1f s", fakeAppStoreProcessCPUSeconds))
        }
        if let postgresCPUSeconds { parts.append(String(format: "PostgreSQL %.1f s", postgresCPUSeconds)) }
        let perReceipt = [processCPUSeconds, postgresCPUSeconds ?? 0, fakeAppStoreProcessCPUSeconds ?? 0]
            .reduce(0, +) / Double(max(receipts, 1)) * 1e6
        parts.append(String(format: "%.0f µs per job in all", perReceipt))
        parts.append(String(format: "worker %.0f µs", processCPUSeconds / Double(max(receipts, 1)) * 1e6))
        if let postgresCPUSeconds {
            parts.append(String(format: "PostgreSQL %.0f µs", postgresCPUSeconds / Double(max(receipts, 1)) * 1e6))
        }
        if let machineBusyCPUSeconds {
            parts.append(String(format: "whole machine %.1f s busy of %.1f s", machineBusyCPUSeconds,
                                Double(cores) * drainSeconds))
        }
        return parts.joined(separator: ", ")
    }

    /// The drain as Apple's stand-in saw it: when the requests reached it, and whether it answered on time. Answers
    /// that go out late mean the fake itself was short of CPU (it shares the machine's cores with the worker and
    /// PostgreSQL), so that part of the calls' time was the stand-in's, not Apple's latency. A fake slow to read the
    /// requests shows in the arrival span instead (an answer is due from when its request was read); over HTTP/2 the
    /// fake's 2 ms timer slots add up to 2 ms to every answer.
    public struct AppleStandIn: Sendable, Codable {
        /// First verifyReceipt request's arrival → the last one's.
        public var requestArrivalSpanSeconds: Double?
        /// First request's arrival → half of them, and → 90% of them.
        public var requestArrivalHalfSeconds: Double?
        public var requestArrivalNinetiethSeconds: Double?
        /// Answers held back for the latency, how late after their due moment they went out (mean and most, in
        /// milliseconds), and how many more than `lateThresholdMilliseconds`.
        public var delayedAnswers: Int
        public var lateMillisecondsMean: Double?
        public var lateMillisecondsMax: Double
        public var lateAnswers: Int
        public var lateThresholdMilliseconds: Double

        init(_ stats: FakeAppStoreStats) {
            requestArrivalSpanSeconds = stats.requestArrivalSpanSeconds
            requestArrivalHalfSeconds = stats.requestArrivalSeconds(untilFraction: 0.5)
            requestArrivalNinetiethSeconds = stats.requestArrivalSeconds(untilFraction: 0.9)
            delayedAnswers = stats.delayedAnswers
            lateMillisecondsMean = stats.lateMillisecondsMean
            lateMillisecondsMax = stats.lateMillisecondsMax
            lateAnswers = stats.lateAnswers
            lateThresholdMilliseconds = FakeAppStoreStats.lateThresholdMilliseconds
        }

        var text: String {
            let arrivals = requestArrivalSpanSeconds.map { span in
                let spread = zip(["half", "90%"], [requestArrivalHalfSeconds, requestArrivalNinetiethSeconds])
                    .compactMap { name, seconds in seconds.map { String(format: "%@ by %.2f s", name, $0) } }
                return String(format: "requests arrived over %.2f s (first → last", span)
                    + spread.map { "; " + $0 }.joined() + ")"
            } ?? "no verifyReceipt requests"
            guard delayedAnswers > 0, let mean = lateMillisecondsMean else { return arrivals + "; no delayed answers" }
            return arrivals + String(
                format: "; %d delayed answers went out %.1f ms after due on average, %.1f ms at most, %d over %.0f ms late",
                delayedAnswers, mean, lateMillisecondsMax, lateAnswers, lateThresholdMilliseconds
            )
        }
    }

    /// The drain in phases, in seconds. "Send" is the transport thread handing the request to libcurl (which sends
    /// it at once, or as soon as a connection or a stream is free); "answer" is the transport receiving the response.
    public struct Phases: Sendable, Codable {
        /// Worker started → first job claimed.
        public var startToFirstClaim: Double
        /// First claim → last request sent: claiming, starting the calls, the transport taking them.
        public var firstClaimToLastSend: Double
        /// First claim → the worker starting its last call (handing it to the transport); the rest of
        /// `firstClaimToLastSend` is the transport's queue.
        public var firstClaimToLastCallStarted: Double
        /// Last request sent → last response received: Apple's latency for the last one, plus waiting for a stream.
        public var lastSendToLastAnswer: Double
        /// Last response received → last verdict written: reading answers, deciding, writing back.
        public var lastAnswerToLastVerdict: Double
        /// Last response received → the client has read the last answer (part of `lastAnswerToLastVerdict`).
        public var lastAnswerToLastRead: Double
        /// The CPU the worker, the fake App Store and PostgreSQL used in each of the three phases above (sampled every
        /// 0.1 s and interpolated at the phases' bounds); nil where it could not be read.
        public var cpuFirstClaimToLastSend: CPUReading?
        public var cpuLastSendToLastAnswer: CPUReading?
        public var cpuLastAnswerToLastVerdict: CPUReading?

        /// The CPU of the three phases, one part after another.
        var cpuText: String? {
            guard let send = cpuFirstClaimToLastSend, let answer = cpuLastSendToLastAnswer,
                let write = cpuLastAnswerToLastVerdict
            else { return nil }
            func parts(_ reading: CPUReading) -> String {
                var parts = [String(format: "worker %.2f", reading.worker)]
                if let fake = reading.fakeAppStore { parts.append(String(format: "fake App Store %.2f", fake)) }
                if let postgres = reading.postgres { parts.append(String(format: "PostgreSQL %.2f", postgres)) }
                return parts.joined(separator: ", ") + " s"
            }
            return "first claim → last send: \(parts(send)); last send → last answer: \(parts(answer)); "
                + "last answer → last verdict written: \(parts(write))"
        }

        var text: String {
            String(
                format: "start → first claim %.2f s; first claim → last send %.2f s (last call started at %.2f s); "
                    + "last send → last answer %.2f s; last answer → last verdict written %.2f s (answers read by "
                    + "%.2f s)",
                startToFirstClaim, firstClaimToLastSend, firstClaimToLastCallStarted, lastSendToLastAnswer,
                lastAnswerToLastVerdict, lastAnswerToLastRead
            )
        }
    }

    /// The run second by second from the worker's start: verdicts written, and the most jobs held.
    public struct Timeline: Sendable, Codable {
        public var verdicts: [Int]
        public var jobsInHand: [Int]
        /// Cores the worker, the fake App Store's process and PostgreSQL kept busy together, per `coresBusyStep`
        /// seconds from the first claim to the last verdict: where it nears the machine's cores, the drain waited for
        /// CPU, not for Apple. Empty when not sampled.
        public var coresBusy: [Double] = []
        public var coresBusyStep: Double = 0.25
        /// The parts whose CPU `coresBusy` adds: those read at both ends of each step.
        public var coresBusyParts: [String] = []
    }

    /// One line of JSON with every figure (`JSONOutput`: control characters and line separators escaped).
    public func json() -> String {
        (try? JSONOutput.line(self, snakeCaseKeys: true)) ?? "{}"
    }
}
