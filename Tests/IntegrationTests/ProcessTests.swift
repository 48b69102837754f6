import FakeAppStore
import Foundation
import ReceiptQueue
import Testing

/// The real `receipt-worker work` process, stopped by real signals.
@Suite("Worker process and signals", .serialized, .ownThread)
struct ProcessTests {
    static var binary: String? {
        var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("receipt-worker").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        let built = TestServer.repositoryRoot.appendingPathComponent(".build/debug/receipt-worker").path
        return FileManager.default.isExecutableFile(atPath: built) ? built : nil
    }

    /// Starts `receipt-worker work` against the harness's database and fake App Store.
    func startWorker(_ h: Harness, extra: [String: String] = [:]) throws -> Process {
        let path = try #require(Self.binary, "build the receipt-worker binary first (swift build)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["work", "--no-scheduler"]
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = h.databaseURL
        environment["APPLE_SHARED_SECRET"] = Harness.secret
        environment["APPLE_BUNDLE_IDS"] = TestServer.bundleIds.joined(separator: ",")
        environment["APPLE_PRODUCTION_URL"] = h.fake.productionURL
        environment["APPLE_SANDBOX_URL"] = h.fake.sandboxURL
        environment["APPLE_TIMEOUT_SECONDS"] = "30"
        environment["POLL_INTERVAL_SECONDS"] = "0.05"
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("rw-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test("a worker killed with SIGKILL mid-call: one sweep rescues its jobs, and they are verified once")
    func killedWorkerIsRescued() throws {
        let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(latencyMilliseconds: 20_000))
        for index in 0..<5 {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("k-\(index)")]), order: "kill-\(index)")
        }
        let worker = try startWorker(h, extra: ["LEASE_SECONDS": "2"])
        #expect(try waitUntil(20) { try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'running'") == "5" })
        kill(worker.processIdentifier, SIGKILL)
        worker.waitUntilExit()
        #expect(worker.terminationReason == .uncaughtSignal)
        // Once the leases have run out (by the database clock), one sweep rescues the jobs.
        #expect(try h.waitUntil(60) { try h.leasesRunOut() })
        let swept = try h.store.sweep(maxAttempts: 10)
        #expect(swept.rescued == 5)
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'queued' AND rescues = 1") == "5")
        h.fake.setLatency(milliseconds: 0, jitter: 0)
        try h.drain()
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == "5")
        #expect(try h.scalar("SELECT count(*) FROM receipt_transactions") == "5")
    }

    @Test("SIGTERM stops claiming, gives jobs in hand back within the grace period, and exits 0", arguments: [SIGTERM, SIGINT])
    func gracefulShutdown(signal: Int32) throws {
        let h = try Harness(fakeConfiguration: FakeAppStoreConfiguration(latencyMilliseconds: 60_000))
        for index in 0..<4 {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("t-\(signal)-\(index)")]), order: "term-\(index)")
        }
        let worker = try startWorker(h, extra: ["SHUTDOWN_GRACE_SECONDS": "1", "APPLE_TIMEOUT_SECONDS": "120"])
        #expect(try waitUntil(20) { try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'running'") == "4" })
        kill(worker.processIdentifier, signal)
        // The grace period (1 s), not Apple's answer, which takes a minute: the exit comes well within half of it.
        let exited = try waitUntil(30) { !worker.isRunning }
        if !exited { kill(worker.processIdentifier, SIGKILL) }
        worker.waitUntilExit()
        #expect(exited, "still running 30 s after the signal")
        #expect(worker.terminationReason == .exit)
        #expect(worker.terminationStatus == 0)
        // Released: claimable at once, the attempt not counted.
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'queued' AND attempts = 0 AND run_at <= now()") == "4")
    }
}
