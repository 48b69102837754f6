import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Testing
import ThreadSupport
@testable import Workers

/// Overflow writers (WRITE_CONNECTIONS): while the first writer is busy with a statement, a second connection writes
/// the verdicts piling up behind it, each exactly once; it closes again once idle. The first writer is held in its
/// statement on purpose (a test trigger waits on an advisory lock the test holds), so the backlog is certain however
/// fast or loaded the machine. Against a real PostgreSQL and the fake App Store.
@Suite("Overflow writers (WRITE_CONNECTIONS)", .serialized, .ownThread)
struct OverflowWriterTests {
    /// The advisory lock (one bigint key) the stall trigger waits on.
    static let stallKey = "4242"

    /// Makes the write-back of a job whose order id starts with "stall" wait for `stallKey`: the writer that takes it
    /// holds its statement open until the test lets go. Claims and lease renewals (rows staying running) pass.
    static func installStall(_ h: Harness) throws {
        _ = try h.db.query(
            """
            CREATE FUNCTION test_stall_write() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_advisory_xact_lock_shared(\(stallKey)::bigint);
                RETURN NEW;
            END $$;
            """
        )
        _ = try h.db.query(
            """
            CREATE TRIGGER test_stall_write BEFORE UPDATE ON receipt_jobs FOR EACH ROW
            WHEN (OLD.state = 'running' AND NEW.state <> 'running' AND NEW.order_id LIKE 'stall%')
            EXECUTE FUNCTION test_stall_write()
            """
        )
    }

    /// A connection of its own holding `stallKey` until `release()`.
    static func holdStall(_ h: Harness) throws -> PostgresConnection {
        let blocker = try PostgresConnection(h.databaseURL)
        _ = try blocker.query("SELECT pg_advisory_lock(\(stallKey)::bigint)")
        return blocker
    }

    static func release(_ blocker: PostgresConnection) throws {
        _ = try blocker.query("SELECT pg_advisory_unlock_all()")
    }

    /// The backend waiting for the advisory lock `blocker` holds (the stalled writer), once there is one; nil after
    /// 30 s.
    static func stalledWriter(_ h: Harness, blocker: String) throws -> String? {
        var pid: String?
        _ = try h.waitUntil(30) {
            pid = try h.scalar(
                """
                SELECT w.pid::text FROM pg_locks w
                JOIN pg_locks held ON held.locktype = 'advisory' AND held.granted AND held.pid = $1::int
                    AND held.database = w.database AND held.classid = w.classid AND held.objid = w.objid
                    AND held.objsubid = w.objsubid
                WHERE w.locktype = 'advisory' AND NOT w.granted
                """,
                [blocker]
            )
            return pid != nil
        }
        return pid
    }

    static func backendPid(_ connection: PostgresConnection) throws -> String {
        try connection.query("SELECT pg_backend_pid()::text AS pid")[0, "pid"] ?? ""
    }

    static func stillStalled(_ h: Harness, _ pid: String) throws -> Bool {
        try h.scalar("SELECT count(*) FROM pg_locks WHERE pid = $1::int AND locktype = 'advisory' AND NOT granted", [pid])
            == "1"
    }

    /// `count` jobs, each a purchase of its own for a user of its own (so no two verdicts wait on one ledger lock);
    /// the first one's order id is `stallOrder` when given.
    static func enqueueBurst(_ h: Harness, _ count: Int, prefix: String, stallOrder: String? = nil) throws -> [Int64] {
        try (0..<count).map { index in
            let transaction = "\(prefix)\(1000 + index)"
            return try h.enqueue(
                Harness.receipt(purchases: [Harness.purchase(transaction)]),
                order: index == 0 ? stallOrder ?? "\(prefix)-order-0" : "\(prefix)-order-\(index)",
                user: "\(prefix)-user-\(index)", transaction: transaction
            )
        }
    }

    static func finalJobs(_ h: Harness) throws -> Int {
        Int(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE finished_at IS NOT NULL") ?? "") ?? -1
    }

    /// Every job verified on its first attempt (no lease lost, none claimed twice), and one ledger row for each.
    static func expectWrittenOnce(_ h: Harness, jobs: Int) throws {
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == String(jobs))
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == String(jobs))
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE attempts <> 1") == "0", "a job was claimed twice")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == String(jobs))
        #expect(try h.scalar("SELECT count(DISTINCT job_id) FROM receipt_transactions") == String(jobs))
    }

    /// The worker's connections to the test's database now (every connection there but the harness's own, and
    /// `except`'s).
    static func workerConnections(_ h: Harness, except: [String] = []) throws -> Int {
        Int(try h.scalar(ConnectionSampler.countSQL(except: except)) ?? "") ?? -1
    }

    // MARK: Jobs

    @Test("WRITE_CONNECTIONS=2: while the first writer is held in a statement, a second connection writes the burst, each job once")
    func burstWrittenOnceOnAFourthConnection() throws {
        let h = try Harness()
        try Self.installStall(h)
        let blocker = try Self.holdStall(h)
        defer { blocker.close() }
        let blockerPid = try Self.backendPid(blocker)
        let jobs = 80
        _ = try Self.enqueueBurst(h, jobs, prefix: "41", stallOrder: "stall")
        let threads = try h.startWorkers(1) {
            $0.writeConnections = 2
            $0.writeBatch = 2
            $0.leaseSeconds = 30
        }
        let stalled = try #require(try Self.stalledWriter(h, blocker: blockerPid), "no writer reached the stalled job")
        // The start-up connection is long gone: from here on, everything counted is a loop's.
        let sampler = try ConnectionSampler(h, except: [blockerPid])
        defer { sampler.stop() }

        // Held: its batch (2) and fewer than a backlog (2) behind it wait; everything else is written meanwhile.
        var final = 0
        let others = try h.waitUntil(60) {
            final = try Self.finalJobs(h)
            return final >= jobs - 3
        }
        #expect(others, "only \(final) of \(jobs) jobs final while the first writer was held")
        #expect(try Self.stillStalled(h, stalled))
        let now = try Self.workerConnections(h, except: [blockerPid, sampler.pid])
        #expect(now >= 4, "the worker holds \(now) connections while a second writer writes")

        try Self.release(blocker)
        let deadline = Date(timeIntervalSinceNow: 60)
        guard threads.allSatisfy({ $0.wait(seconds: deadline.timeIntervalSinceNow) }) else {
            throw Harness.giveUp(threads, reason: "the worker did not drain the queue within 60 s")
        }
        try Harness.rethrow(threads)
        let seen = sampler.stop()
        try Self.expectWrittenOnce(h, jobs: jobs)
        #expect(seen.most >= 4, "connections seen at most: \(seen.most) in \(seen.samples) samples")
        #expect(seen.most <= 5, "more than 3 + 2 × (WRITE_CONNECTIONS − 1) connections: \(seen.most)")
    }

    @Test("a burst with a small write batch is written exactly once, on at most 3 + 2 × (WRITE_CONNECTIONS − 1) connections", arguments: [1, 2])
    func burstWithinTheConnectionBudget(writeConnections: Int) throws {
        let h = try Harness()
        let jobs = 150
        _ = try Self.enqueueBurst(h, jobs, prefix: "4\(writeConnections + 1)")
        let threads = try h.startWorkers(1) {
            $0.writeConnections = writeConnections
            $0.writeBatch = 2
            $0.leaseSeconds = 30
        }
        // Counted from the first verdict on: the start-up check's connection is closed by then.
        #expect(try h.waitUntil(60) { try Self.finalJobs(h) > 0 })
        let sampler = try ConnectionSampler(h)
        defer { sampler.stop() }
        let deadline = Date(timeIntervalSinceNow: 90)
        guard threads.allSatisfy({ $0.wait(seconds: deadline.timeIntervalSinceNow) }) else {
            throw Harness.giveUp(threads, reason: "the worker did not drain the queue within 90 s")
        }
        try Harness.rethrow(threads)
        let seen = sampler.stop()
        try Self.expectWrittenOnce(h, jobs: jobs)
        // The claim, write and maintenance connections are open from the first verdict on.
        #expect(seen.most >= 3, "connections seen at most: \(seen.most) in \(seen.samples) samples")
        #expect(seen.most <= 3 + 2 * (writeConnections - 1), "connections seen at most: \(seen.most)")
        if writeConnections == 1 {
            #expect(seen.most <= 3, "WRITE_CONNECTIONS=1 opened an overflow connection: \(seen.most)")
        }
    }

    @Test("an overflow writer's connection closes after overflowWriterIdleSeconds without a batch, and opens again for the next burst")
    func overflowConnectionClosesWhenIdle() throws {
        let h = try Harness()
        try Self.installStall(h)
        let blocker = try Self.holdStall(h)
        defer { blocker.close() }
        let blockerPid = try Self.backendPid(blocker)
        let threads = try h.startWorkers(1) {
            $0.drain = false
            $0.writeConnections = 2
            $0.writeBatch = 2
            $0.leaseSeconds = 30
            // Long enough that the overflow connection is still open when the busy count is taken after the others
            // are final, on a loaded machine (at 0.5 s a delay before that count saw 3).
            $0.overflowWriterIdleSeconds = 5
        }
        let worker = try #require(threads.first)
        defer { worker.stop(waitingUpTo: 30) }
        var total = 0
        for (round, prefix) in ["43", "44"].enumerated() {
            if round > 0 { _ = try blocker.query("SELECT pg_advisory_lock(\(Self.stallKey)::bigint)") }
            let jobs = 40
            _ = try Self.enqueueBurst(h, jobs, prefix: prefix, stallOrder: "stall-\(round)")
            total += jobs
            let stalled = try #require(
                try Self.stalledWriter(h, blocker: blockerPid), "round \(round): no writer reached the stalled job"
            )
            var final = 0
            let others = try h.waitUntil(60) {
                final = try Self.finalJobs(h)
                return final >= total - 3
            }
            #expect(others, "round \(round): only \(final) of \(total) jobs final while the first writer was held")
            #expect(try Self.stillStalled(h, stalled))
            let busy = try Self.workerConnections(h, except: [blockerPid])
            #expect(busy >= 4, "round \(round): \(busy) connections while a second writer writes")
            try Self.release(blocker)
            #expect(try h.waitUntil(60) { try Self.finalJobs(h) == total }, "round \(round): not every job final")

            // The worker keeps running (not a drain); its overflow connection goes once idle.
            var quiet = -1
            let closed = try h.waitUntil(60) {
                quiet = try Self.workerConnections(h, except: [blockerPid])
                return quiet == 3
            }
            #expect(closed, "round \(round): the worker still holds \(quiet) connections after the burst")
            #expect(!worker.wait(seconds: 0), "the worker ended")
            try Harness.rethrow(threads)
        }
        try Self.expectWrittenOnce(h, jobs: total)
    }

    // MARK: Notifications

    @Test("WRITE_CONNECTIONS=2: a burst of notifications is applied exactly once each, by more than one connection")
    func notificationBurstAppliedOnceByTwoConnections() throws {
        let h = try Harness()
        let count = 80
        let uuids = (0..<count).map { _ in UUID().uuidString.lowercased() }
        let ids = try (0..<count).map { index in
            try NotificationBatchTests.receive(
                h, try NotificationBatchTests.refund("56000000000\(10_000 + index)", uuid: uuids[index])
            )
        }
        // Which connection applied each notification: its event's insert records the backend.
        _ = try h.db.query("CREATE TABLE public.test_appliers (pid integer NOT NULL, transaction_id text NOT NULL)")
        _ = try h.db.query(
            """
            CREATE FUNCTION test_record_applier() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO public.test_appliers VALUES (pg_backend_pid(), NEW.transaction_id);
                RETURN NEW;
            END $$;
            """
        )
        _ = try h.db.query(
            "CREATE TRIGGER test_record_applier AFTER INSERT ON receipt_events FOR EACH ROW EXECUTE FUNCTION test_record_applier()"
        )
        // The first notification's UUID lock is held elsewhere: the writer whose batch has it waits there.
        let blocker = try PostgresConnection(h.databaseURL)
        defer { blocker.close() }
        _ = try blocker.query("SELECT pg_advisory_lock(hashtextextended('receipt_notification:' || $1, 0))", [uuids[0]])

        let worker = NotificationIntakeTests.worker(h) {
            $0.writeConnections = 2
            $0.notificationThreads = 2
            $0.leaseSeconds = 30
        }
        let stop = try NotificationIntakeTests.startNotificationLoop(h, worker)
        defer { stop() }
        let stalled = try #require(
            try Self.stalledWriter(h, blocker: try Self.backendPid(blocker)), "no writer reached the held notification"
        )
        // Another connection applies what piles up behind the held one.
        let other = try h.waitUntil(60) {
            try h.scalar("SELECT count(*) FROM public.test_appliers WHERE pid <> $1::int", [stalled]) != "0"
        }
        #expect(other, "nothing was applied while the writer holding the first notification waited")
        #expect(try Self.stillStalled(h, stalled))
        _ = try blocker.query("SELECT pg_advisory_unlock_all()")

        #expect(try h.waitUntil(60) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'applied'") == String(count)
        }, "not every notification applied")
        for id in ids { #expect(try NotificationBatchTests.state(h, id) == "applied") }
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE attempts <> 1") == "0")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == String(count))
        #expect(try h.scalar("SELECT count(DISTINCT transaction_id) FROM receipt_events") == String(count))
        let appliers = Int(try h.scalar("SELECT count(DISTINCT pid) FROM public.test_appliers") ?? "") ?? 0
        #expect(appliers >= 2, "applied by \(appliers) connection(s)")
    }
}

/// Counts the worker's connections to a test's database every 5 ms, on a connection of its own, until `stop()`.
/// Every connection there counts but the harness's, the sampler's own (`pid`) and those in `except` (all of them are
/// named receipt-worker).
final class ConnectionSampler: Sendable {
    struct Seen: Sendable {
        var most = 0
        var samples = 0
        var error: String?
    }

    private struct State {
        var seen = Seen()
        var stopping = false
    }

    private let state: ConditionLock<State>
    private let thread: DedicatedThread
    /// The sampler's own backend.
    let pid: String

    static func countSQL(except pids: [String]) -> String {
        let excluded = (["pg_backend_pid()"] + pids.map { "\(Int($0) ?? 0)" }).joined(separator: ", ")
        return """
            SELECT count(*)::text FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend' AND pid NOT IN (\(excluded))
            """
    }

    init(_ h: Harness, except: [String] = []) throws {
        let harnessPid = try h.scalar("SELECT pg_backend_pid()::text") ?? ""
        let sql = Self.countSQL(except: except + [harnessPid])
        let connection = try PostgresConnection(h.databaseURL)
        pid = try connection.query("SELECT pg_backend_pid()::text AS pid")[0, "pid"] ?? ""
        let state = ConditionLock(State())
        self.state = state
        thread = try DedicatedThread.start(name: "connection-sampler") {
            defer { connection.close() }
            while !state.withLock({ $0.stopping }) {
                do {
                    let count = Int((try connection.query(sql).rows.first?.first ?? nil) ?? "") ?? -1
                    state.withLock {
                        $0.seen.most = max($0.seen.most, count)
                        $0.seen.samples += 1
                    }
                } catch {
                    state.withLock { $0.seen.error = "\(error)" }
                    return
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// Stops sampling (the first call waits for the thread) and returns what was seen; a sampling error is recorded
    /// as an issue.
    @discardableResult
    func stop() -> Seen {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return state.withLock { $0.seen } }
        thread.join()
        let seen = state.withLock { $0.seen }
        if let error = seen.error { Issue.record("sampling connections failed: \(error)") }
        return seen
    }
}

#if os(Linux)
/// `work` reads WRITE_CONNECTIONS and refuses a value outside 1-8 before it connects, naming the setting (exit 2).
@Suite("WRITE_CONNECTIONS on the command line", .ownThread)
struct OverflowWriterSettingTests {
    @Test(
        "work with WRITE_CONNECTIONS out of range or not a number exits 2 and names it",
        arguments: [
            ("0", "WRITE_CONNECTIONS must be at least 1, got 0"), ("9", "WRITE_CONNECTIONS must be 1-8, got 9"),
            ("two", "WRITE_CONNECTIONS must be a whole number"),
        ]
    )
    func refused(value: String, message: String) throws {
        let child = try Self.work(writeConnections: value)
        let status = child.wait(timeout: 60)
        #expect(status == 2, "\(child.output)")
        #expect(child.output.contains(message), "\(child.output)")
    }

    /// `receipt-worker work` with every required setting and WRITE_CONNECTIONS `value` (nothing listens at its
    /// database: a refused setting is reported before the connection).
    static func work(writeConnections value: String) throws -> ChildProcess {
        try ChildProcess(
            ["work"],
            environment: ChildProcess.environment(
                removing: [],
                setting: [
                    "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "APPLE_SHARED_SECRET": "s",
                    "APPLE_BUNDLE_IDS": "com.example.app", "WRITE_CONNECTIONS": value,
                ]
            )
        )
    }
}
#endif
