#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import Testing

/// The commands an operator runs, run as the built binary: migrate, sweep (once and --loop), requeue, bench, and
/// work's settings (a flag over its variable, the sandbox policy).
@Suite("receipt-worker commands: migrate, sweep, requeue, bench, settings", .ownThread)
struct CommandsTests {
    @Test("migrate applies everything to an empty database and registers the apps, then finds it current")
    func migrate() async throws {
        let url = try TestServer.get().emptyDatabase()
        let first = try await Self.run(
            ["migrate", "--bundle-ids", "com.example.app, com.example.other"],
            ChildProcess.environment(
                removing: ["APPLE_BUNDLE_IDS"],
                setting: ["DATABASE_URL": url, "RECEIPT_WORKER_SQL_DIR": TestServer.sqlDirectory]
            )
        )
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("schema: applied migrations 001_schema"), "\(first.output)")
        #expect(first.output.contains("apps: com.example.app, com.example.other"), "\(first.output)")
        // Again, with the SQL found beside the binary (a source checkout) and the apps from the variable.
        let second = try await Self.run(
            ["migrate"],
            ChildProcess.environment(
                removing: ["RECEIPT_WORKER_SQL_DIR"],
                setting: ["DATABASE_URL": url, "APPLE_BUNDLE_IDS": "com.example.third"]
            )
        )
        #expect(second.status == 0, "\(second.output)")
        #expect(second.output.contains("schema: current ("), "\(second.output)")
        let connection = try PostgresConnection(url)
        defer { connection.close() }
        let apps = try connection.query("SELECT bundle_id FROM receipt_apps ORDER BY 1").rows.map { $0[0] ?? "" }
        #expect(apps == ["com.example.app", "com.example.other", "com.example.third"])
    }

    @Test("a flag overrides its variable: migrate --sql-dir over RECEIPT_WORKER_SQL_DIR")
    func sqlDirFlag() async throws {
        let url = try TestServer.get().emptyDatabase()
        let environment = ChildProcess.environment(
            setting: ["DATABASE_URL": url, "RECEIPT_WORKER_SQL_DIR": "/nonexistent/sql", "APPLE_BUNDLE_IDS": "com.example.app"]
        )
        let refused = try await Self.run(["migrate"], environment)
        #expect(refused.status != 0 && refused.output.contains("/nonexistent/sql"), "\(refused.output)")
        let flagged = try await Self.run(["migrate", "--sql-dir", TestServer.sqlDirectory], environment)
        #expect(flagged.status == 0, "\(flagged.output)")
    }

    @Test("sweep --loop rescues expired leases pass after pass until SIGTERM, then exits 0")
    func sweepLoop() async throws {
        let world = try ProcessWorld()
        for index in 0..<3 {
            try world.enqueue(Harness.receipt(purchases: [Harness.purchase("loop-\(index)")]), order: "loop-\(index)")
        }
        let sweeper = try ChildProcess(["sweep", "--loop", "--interval", "0.2"], environment: world.environment())
        #expect(await sweeper.line(containing: "promoted 0, rescued 0, dead 0", within: 60) != nil, "\(sweeper.output)")
        // A worker that claimed the jobs and vanished: the loop's next passes take them back.
        #expect(try world.store.claim(worker: "vanished", limit: 3, leaseSeconds: 0.5).count == 3)
        let rescued = try await world.waitUntil(60) {
            try world.int("SELECT count(*) FROM receipt_jobs WHERE state = 'queued' AND rescues = 1") == 3
        }
        #expect(rescued, "\(sweeper.output)")
        func reported() -> Int {
            sweeper.lines(containing: "rescued ").compactMap { line in
                line.firstMatch(of: /rescued (\d+)/).flatMap { Int($0.output.1) }
            }.reduce(0, +)
        }
        // Each pass prints its line as it happens.
        #expect(await world.waitUntil(30) { reported() == 3 }, "\(sweeper.output)")
        sweeper.signal(SIGTERM)
        #expect(await sweeper.exit(within: 30) == 0, "\(sweeper.output)")
        #expect(reported() == 3, "\(sweeper.output)")
    }

    @Test("a flag overrides its variable: sweep --max-attempts 1 over MAX_ATTEMPTS=50 sends an expired last attempt to dead")
    func sweepMaxAttemptsFlag() async throws {
        let world = try ProcessWorld()
        let id = try world.enqueue(Harness.receipt(purchases: [Harness.purchase("max-1")]), order: "max-1")
        #expect(try world.store.claim(worker: "vanished", limit: 1, leaseSeconds: 0.2).count == 1)
        #expect(try await world.waitUntil(60) { try world.int("SELECT count(*) FROM receipt_jobs WHERE lease_until < now()") == 1 })
        let swept = try await Self.run(["sweep", "--max-attempts", "1"], world.environment(["MAX_ATTEMPTS": "50"]))
        #expect(swept.status == 0, "\(swept.output)")
        #expect(swept.output.contains("promoted 0, rescued 0, dead 1"), "\(swept.output)")
        #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows == [["dead"]])

        // requeue JOB_ID puts it back with fresh attempts; a verified job is refused, saying why.
        let requeued = try await Self.run(["requeue", String(id), "--note", "after the fix"], world.environment())
        #expect(requeued.status == 0, "\(requeued.output)")
        #expect(requeued.output.contains("requeued job \(id)"), "\(requeued.output)")
        #expect(try world.query("SELECT state, attempts FROM receipt_jobs WHERE id = $1", [String(id)]).rows == [["queued", "0"]])
        try world.startWorker(arguments: ["work", "--drain"])
        #expect(try await world.waitUntil(60) { try world.count(state: "verified") == 1 })
        let refused = try await Self.run(["requeue", String(id)], world.environment())
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("verified"), "\(refused.output)")
        #expect(try world.int("SELECT count(*) FROM receipt_admin_log WHERE action = 'requeue'") == 1)
    }

    @Test("a flag overrides its variable: work --max-attempts 1 over MAX_ATTEMPTS=50")
    func workMaxAttemptsFlag() async throws {
        let world = try ProcessWorld()
        let id = try world.enqueue(
            Harness.receipt(purchases: [Harness.purchase("wmax-1")], faults: [.status21009, .status21009]), order: "wmax-1"
        )
        let drained = try await Self.run(["work", "--drain", "--max-attempts", "1"], world.environment(["MAX_ATTEMPTS": "50"]))
        #expect(drained.status == 0, "\(drained.output.suffix(2000))")
        #expect(try world.query("SELECT state, attempts FROM receipt_jobs WHERE id = $1", [String(id)]).rows == [["dead", "1"]])
    }

    @Test("SANDBOX_POLICY and SANDBOX_ALLOWED_USERS: read case-insensitively and trimmed, refused when incomplete, overridden by the flag")
    func sandboxPolicy() async throws {
        let world = try ProcessWorld()
        let missing = try await Self.run(["work"], world.environment(["SANDBOX_POLICY": "allowlist"]))
        #expect(missing.status == 2 && missing.output.contains("SANDBOX_ALLOWED_USERS"), "\(missing.output)")
        let blank = try await Self.run(["work"], world.environment(["SANDBOX_POLICY": "allowlist", "SANDBOX_ALLOWED_USERS": " , "]))
        #expect(blank.status == 2 && blank.output.contains("SANDBOX_ALLOWED_USERS"), "\(blank.output)")
        let unknown = try await Self.run(["work"], world.environment(["SANDBOX_POLICY": "sometimes"]))
        #expect(unknown.status == 2 && unknown.output.contains("SANDBOX_POLICY"), "\(unknown.output)")

        func sandboxOrder(_ user: String) throws -> Int64 {
            try world.enqueue(
                Harness.receipt(environment: "Sandbox", purchases: [Harness.purchase("sb-\(user)")]), order: "sb-\(user)", user: user
            )
        }
        let allowed = try ["reviewer", "qa", "mallory"].map { ($0, try sandboxOrder($0)) }
        let listed = try await Self.run(
            ["work", "--drain"],
            world.environment(["SANDBOX_POLICY": " Allowlist ", "SANDBOX_ALLOWED_USERS": " reviewer , ,qa "])
        )
        #expect(listed.status == 0, "\(listed.output.suffix(2000))")
        for (user, id) in allowed {
            let row = try world.query("SELECT state, coalesce(reason, '-') FROM receipt_jobs WHERE id = $1", [String(id)]).rows
            #expect(row == [user == "mallory" ? ["rejected", "sandbox_not_allowed"] : ["verified", "-"]], "\(user): \(row)")
        }
        // The flag wins over the variable.
        let flagged = try sandboxOrder("tester")
        let rejected = try await Self.run(
            ["work", "--drain", "--sandbox-policy", "reject"], world.environment(["SANDBOX_POLICY": "accept"])
        )
        #expect(rejected.status == 0, "\(rejected.output.suffix(2000))")
        #expect(try world.query("SELECT reason FROM receipt_jobs WHERE id = $1", [String(flagged)]).rows == [["sandbox_not_allowed"]])
    }

    @Test("MAX_RECEIPT_BYTES is the worker's limit: a receipt enqueue accepted but larger than it is malformed_input")
    func maxReceiptBytes() async throws {
        let world = try ProcessWorld()
        let receipt = Harness.receipt(purchases: [Harness.purchase("size-1")])
        let id = try world.enqueue(receipt, order: "size-1")
        #expect(try world.count(state: "queued") == 1)
        let limit = receipt.utf8.count - 1
        let drained = try await Self.run(["work", "--drain"], world.environment(["MAX_RECEIPT_BYTES": String(limit)]))
        #expect(drained.status == 0, "\(drained.output.suffix(2000))")
        let row = try world.query("SELECT state, reason, last_error FROM receipt_jobs WHERE id = $1", [String(id)]).rows
        #expect(row.first?[0] == "rejected" && row.first?[1] == "malformed_input", "\(row)")
        #expect(try world.fakeServer.stats().total == 0, "Apple was asked about a receipt over the limit")
    }

    @Test("bench: a small run completes and prints its table (no timing is asserted)")
    func bench() async throws {
        let (status, output) = try await Self.run(
            ["bench", "--receipts", "200", "--pickup-samples", "5", "--settle-seconds", "1"],
            ChildProcess.environment(removing: ["DATABASE_URL"]), timeout: 300
        )
        #expect(status == 0, "\(output)")
        for line in [
            "verdicts                        verified 200, rejected 0, dead 0; retries 0, lost leases 0",
            "ledger rows                     200", "idle pickup (5 jobs)", "enqueue → verdict", "DB connections",
        ] {
            #expect(output.contains(line), "no \"\(line)\" in:\n\(output)")
        }
        // The peak, and the resident set as the worker started, which cannot be above it.
        let rss = output.split(separator: "\n").first { $0.hasPrefix("peak RSS (VmHWM)") }.map(String.init) ?? ""
        let figures = rss.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(rss.contains("MiB as the worker started") && figures.count >= 2, "\(rss)")
        if figures.count >= 2 { #expect(figures[0] >= figures[1] && figures[1] > 0, "\(rss)") }
        // --settle-seconds: the resident set read again at least that long after the last verdict, below the peak.
        let settled = output.split(separator: "\n").first { $0.hasPrefix("RSS after the drain") }.map(String.init) ?? ""
        let settledFigures = settled.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(settled.hasSuffix("s after the last verdict (the worker idle)") && settledFigures.count == 2, "\(settled)")
        if settledFigures.count == 2, let peak = figures.first {
            #expect(settledFigures[0] > 0 && settledFigures[0] <= peak && settledFigures[1] >= 1, "\(settled)")
        }
    }

    @Test("bench --signed-transactions --confirm: every job verified, confirmed by a call to the fake, verified again")
    func benchConfirmed() async throws {
        let (status, output) = try await Self.run(
            ["bench", "--signed-transactions", "--confirm", "--receipts", "200", "--pickup-samples", "5"],
            ChildProcess.environment(removing: ["DATABASE_URL"]), timeout: 300
        )
        #expect(status == 0, "\(output)")
        for line in [
            "verdicts                        verified 200, rejected 0, dead 0; retries 0, lost leases 0",
            "ledger rows                     200", "signed transactions, confirmed  200 JWS",
            // 200 Get Transaction Info calls, and the 5 pickup receipts' verifyReceipt calls.
            "205 responses", "database writes, per job",
        ] {
            #expect(output.contains(line), "no \"\(line)\" in:\n\(output)")
        }
        let (refused, message) = try await Self.run(
            ["bench", "--confirm", "--receipts", "10"], ChildProcess.environment(removing: ["DATABASE_URL"])
        )
        #expect(refused == 2 && message.contains("--confirm needs --signed-transactions"), "\(message)")
    }

    @Test("bench --soak: steady load with Apple's faults, a line per interval, every job final and credited once")
    func benchSoak() async throws {
        let (status, output) = try await Self.run(
            ["bench", "--soak", "0.25", "--soak-interval", "3", "--rate", "100", "--apple-latency-ms", "20",
             "--apple-jitter-ms", "80", "--json"],
            ChildProcess.environment(removing: ["DATABASE_URL"]), timeout: 300
        )
        #expect(status == 0, "\(output)")
        let verdict = output.split(separator: "\n").first { $0.hasPrefix("exactly once") }
        #expect(verdict?.hasSuffix("yes: every job final, one ledger row per verified job, one credit per notification "
            + "applied") == true, "\(output)")
        let json = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "\(output)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let minutes = try #require(report["minutes"] as? [[String: Any]])
        let checks = try #require(report["checks"] as? [String: Any])
        // 15 s in lines of 3 s, each printed as it ended.
        #expect(minutes.count == 5, "\(json)")
        for index in 1...5 {
            #expect(output.contains("bench: " + String(repeating: " ", count: 4 - String(index).count) + "\(index) "))
        }
        let enqueued = minutes.compactMap { $0["enqueued"] as? Int }.reduce(0, +)
        let finished = minutes.compactMap { $0["finished"] as? Int }.reduce(0, +)
        let retries = minutes.compactMap { $0["retries"] as? Int }.reduce(0, +)
        let sent = minutes.compactMap { $0["notificationsSent"] as? Int }.reduce(0, +)
        // About 100 a second for 15 s; the faults (2% of calls) cost retries; a tenth as many notifications.
        #expect((1_200...1_600).contains(enqueued) && finished <= enqueued, "\(json)")
        #expect(retries > 0, "no fault retried in \(json)")
        #expect((100...160).contains(sent), "\(json)")
        #expect(checks["jobs"] as? Int == enqueued && checks["jobsFinal"] as? Int == enqueued, "\(json)")
        #expect(checks["ledgerRows"] as? Int == checks["verified"] as? Int, "\(json)")
        #expect(checks["verified"] as? Int == enqueued && checks["dead"] as? Int == 0, "\(json)")
        #expect(checks["notificationsApplied"] as? Int == sent && checks["notificationCredits"] as? Int == sent, "\(json)")
        #expect((report["flatness"] as? [Any])?.isEmpty == false, "\(json)")
    }

    @Test("bench --postgres-pid: DATABASE_URL's postmaster adds PostgreSQL's CPU; another process is refused")
    func benchPostgresPID() async throws {
        let world = try ProcessWorld(ownCluster: true)
        let backend = try #require(world.query("SELECT pg_backend_pid() AS pid").int64(0, "pid"))
        let stat = try String(contentsOfFile: "/proc/\(backend)/stat", encoding: .utf8)
        let postmaster = try #require(stat.split(separator: ")").last?.split(separator: " ").dropFirst().first)
        let environment = world.environment()

        let measured = try await Self.run(
            ["bench", "--receipts", "50", "--pickup-samples", "0", "--scratch-database", "bench_pid",
             "--postgres-pid", String(postmaster)],
            environment, timeout: 300
        )
        #expect(measured.status == 0, "\(measured.output)")
        let cpu = measured.output.split(separator: "\n").first { $0.hasPrefix("CPU during the drain") }
        #expect(cpu?.contains(", PostgreSQL ") == true, "no PostgreSQL CPU in:\n\(measured.output)")

        let refused = try await Self.run(
            ["bench", "--receipts", "50", "--pickup-samples", "0", "--scratch-database", "bench_pid_wrong",
             "--postgres-pid", String(getpid())],
            environment, timeout: 300
        )
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("is not the postmaster of DATABASE_URL's server"), "\(refused.output)")
    }

    /// Runs a command that exits by itself; its status (nil after `timeout`) and output.
    static func run(
        _ arguments: [String], _ environment: [String: String], timeout: Double = 120
    ) async throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments, environment: environment)
        let status = await child.exit(within: timeout)
        return (status, child.output)
    }
}
#endif
