import Foundation
import Logging
import PostgresClient
import Synchronization
import Testing
import Workers

/// `work`'s own reconciliation (RECONCILE_AT): yesterday's report, Pacific Time, fetched and compared once per day
/// across workers (receipt_reconciliation_claim()), a report not ready asked for again, the day's record kept.
@Suite("Reconciliation: work at RECONCILE_AT", .serialized, .ownThread)
struct ReconcileScheduleTests {
    /// Yesterday in America/Los_Angeles, by the database's clock: the day work reconciles.
    static func yesterday(_ db: PostgresConnection) throws -> String {
        try #require(try db.query(
            "SELECT ((now() AT TIME ZONE 'America/Los_Angeles')::date - 1)::text AS day"
        )[0, "day"])
    }

    /// `count` workers (no jobs, no drain) reconciling with `fetch`, checked every 0.1 s.
    static func workers(
        _ count: Int, databaseURL: String, retrySeconds: Double = 0.2,
        fetch: @escaping @Sendable (String) throws -> ReportFetch
    ) throws -> [WorkerThread] {
        var logger = Logger(label: "test-reconcile")
        logger.logLevel = .critical
        return try (0..<count).map { _ in
            var schedule = ReconcileSchedule(at: "00:00", fetch: fetch)
            schedule.checkEverySeconds = 0.1
            schedule.retrySeconds = retrySeconds
            schedule.maxAttempts = 3
            let configuration = Harness.configuration {
                $0.drain = false
                $0.reconcile = schedule
            }
            return try WorkerThread(
                Worker(configuration: configuration, databaseURL: databaseURL, client: nil, logger: logger)
            )
        }
    }

    static func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    @Test("two workers: yesterday's report fetched and compared once, the day recorded done, an event for its differences")
    func oncePerDay() throws {
        let url = try TestServer.get().freshDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        let day = try Self.yesterday(db)
        let asked = Mutex<[String]>([])
        let threads = try Self.workers(2, databaseURL: url) { date in
            asked.withLock { $0.append(date) }
            Thread.sleep(forTimeInterval: 0.3)  // both workers check while the first one fetches
            return .lines([Reconciliation.AppleLine(sku: "lost", country: "US", currency: "USD", price: "0.99", units: 1)])
        }
        defer { for thread in threads { thread.stop(waitingUpTo: 10) } }
        let done = try Self.waitUntil(30) {
            try db.query("SELECT state FROM receipt_reconciliation_schedule WHERE report_date = $1::date", [day])
                .rows.first?.first == "done"
        }
        #expect(done)
        // Checks go on every 0.1 s: a day done is not done again.
        Thread.sleep(forTimeInterval: 1)
        #expect(asked.withLock { $0 } == [day])
        let runs = try db.query("SELECT report_date::text, source, differences FROM receipt_reconciliations")
        #expect(runs.rows == [[day, "api", "1"]])
        #expect(try db.query(
            "SELECT count(*) FROM receipt_events WHERE kind = 'reconciliation_differences'"
        ).rows.first?.first == "1")
        #expect(try db.query(
            "SELECT s.run_id = r.id FROM receipt_reconciliation_schedule s, receipt_reconciliations r"
        ).rows.first?.first == "t")
    }

    @Test("a report not ready is asked for again later, and no run is stored until it is")
    func notReadyThenReady() throws {
        let url = try TestServer.get().freshDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        let asked = Mutex<[Date]>([])
        let threads = try Self.workers(1, databaseURL: url, retrySeconds: 1) { _ in
            let attempt = asked.withLock { times in
                times.append(Date())
                return times.count
            }
            return attempt == 1 ? .notReady("Report is not available yet") : .lines([])
        }
        defer { for thread in threads { thread.stop(waitingUpTo: 10) } }
        let waiting = try Self.waitUntil(30) {
            try db.query("SELECT state, last_error FROM receipt_reconciliation_schedule").rows.first?.first == "waiting"
        }
        #expect(waiting)
        #expect(try db.query("SELECT count(*) FROM receipt_reconciliations").rows.first?.first == "0")
        let done = try Self.waitUntil(30) {
            try db.query("SELECT state FROM receipt_reconciliation_schedule").rows.first?.first == "done"
        }
        #expect(done)
        let times = asked.withLock { $0 }
        #expect(times.count == 2)
        // Asked again after the retry interval, not at the next check (every 0.1 s).
        if times.count == 2 { #expect(times[1].timeIntervalSince(times[0]) >= 0.9, "\(times)") }
        #expect(try db.query("SELECT attempts FROM receipt_reconciliation_schedule").rows.first?.first == "2")
        #expect(try db.query("SELECT count(*) FROM receipt_reconciliations WHERE differences = 0").rows.first?.first == "1")
    }

    @Test("a worker whose lease ran out cannot record the day: the worker that took it over does")
    func leaseTakenOver() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        func claim(_ worker: String, lease: Double) throws -> String? {
            try db.query("SELECT receipt_reconciliation_claim('00:00', $1, $2, 5)::text", [worker, String(lease)])
                .rows.first?.first ?? nil
        }
        func finish(_ worker: String, _ day: String) throws -> String? {
            try db.query("SELECT receipt_reconciliation_finish($1::date, $2, NULL, 'not ready', 60)", [day, worker])
                .rows.first?.first ?? nil
        }
        let day = try #require(try claim("w1", lease: 0.01))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(try claim("w2", lease: 60) == day)
        #expect(try claim("w3", lease: 60) == nil, "w2 holds the day")
        #expect(try finish("w1", day) == "f")
        #expect(try db.query("SELECT state, locked_by FROM receipt_reconciliation_schedule").rows == [["running", "w2"]])
        #expect(try finish("w2", day) == "t")
        #expect(try db.query("SELECT state, attempts FROM receipt_reconciliation_schedule").rows == [["waiting", "2"]])
    }

    @Test("attempts are bounded: a report never ready is given up after maxAttempts, and not asked for again")
    func bounded() throws {
        let url = try TestServer.get().freshDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        let asked = Mutex(0)
        let threads = try Self.workers(1, databaseURL: url, retrySeconds: 0.1) { _ in
            asked.withLock { $0 += 1 }
            return .notReady("Report is not available yet")
        }
        defer { for thread in threads { thread.stop(waitingUpTo: 10) } }
        let failed = try Self.waitUntil(30) {
            try db.query("SELECT state FROM receipt_reconciliation_schedule").rows.first?.first == "failed"
        }
        #expect(failed)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(asked.withLock { $0 } == 3)
    }
}
