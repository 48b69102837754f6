#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import Testing

/// How workers find new jobs: `NOTIFY receipt_jobs` when enqueue sends it, polling when it does not
/// (`receipt_worker.notify = 'off'`); and what that costs in database connections.
@Suite("Pickup: LISTEN, the polling fallback, and three connections per process", .serialized, .ownThread)
struct PickupTests {
    @Test("an idle worker takes a new job on NOTIFY receipt_jobs, long before its next poll")
    func listenPickup() throws {
        let h = try Harness()
        let first = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("pick-1")]), order: "pick-1")
        let threads = try h.startWorkers(1) {
            $0.drain = false
            $0.pollIntervalSeconds = 600
        }
        defer { for thread in threads { thread.stop(waitingUpTo: 30) } }
        // The first job is taken by the claim at start-up; the claim connection listens from then on.
        #expect(try h.waitUntil(60) { try h.job(first)["state"] == "verified" })
        let second = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("pick-2")]), order: "pick-2")
        #expect(try h.waitUntil(120) { try h.job(second)["state"] == "verified" }, "not picked up within 120 s of a 600 s poll")
        for thread in threads { #expect(thread.stop(waitingUpTo: 30)) }
        try Harness.rethrow(threads)
    }

    @Test("with receipt_worker.notify = 'off', enqueue sends no NOTIFY, and a polling worker still takes the job")
    func pollingFallback() throws {
        let h = try Harness()
        let listener = try PostgresConnection(h.databaseURL)
        defer { listener.close() }
        try listener.listen("receipt_jobs")
        func notificationsOfAnEnqueue(_ order: String) throws -> [String] {
            _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase(order)]), order: order)
            return try h.notificationsSoFar(on: listener, channel: "receipt_jobs")
        }
        #expect(try notificationsOfAnEnqueue("notify-on") == [""], "enqueue did not notify with the setting unset")
        _ = try h.db.query("SET receipt_worker.notify = 'off'")
        #expect(try notificationsOfAnEnqueue("notify-off").isEmpty, "enqueue notified with receipt_worker.notify = 'off'")
        try h.drain { $0.pollIntervalSeconds = 0.2 }
        #expect(try h.scalar("SELECT count(*) FROM receipt_jobs WHERE state = 'verified'") == "2")
    }

    /// Sampled all through a drain: while calls are in flight and while verdicts are written. The write connection
    /// opens with the first verdict, so the count grows to three and never beyond. One write connection: overflow
    /// writers (OverflowWriterTests) open more only while a whole write batch waits.
    @Test("a work process holds three database connections, with one call in flight or hundreds", arguments: [1, 400])
    func threeConnections(maxInFlight: Int) async throws {
        let jobs = maxInFlight == 1 ? 10 : 400
        // With 400 in flight, answers 10 s after each request (and a 60 s timeout), so that all 400 are running
        // together before the first answer even when claiming them is slow on a loaded machine (2 s was tight).
        let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: maxInFlight == 1 ? 200 : 10_000))
        try world.enqueueAll((0..<jobs).map { (Harness.receipt(purchases: [Harness.purchase("conn-\($0)")]), "conn-\($0)", "u", "pro.monthly") })
        let worker = try world.startWorker(
            ["MAX_IN_FLIGHT": String(maxInFlight), "LEASE_SECONDS": "30", "WRITE_CONNECTIONS": "1", "APPLE_TIMEOUT_SECONDS": "60"],
            arguments: ["work", "--drain"]
        )
        var connections: Set<Int> = []
        var mostInFlight = 0
        repeat {
            // Start-up's short connections (the first check, registering the apps) come and go before the loops.
            if await worker.line(containing: "worker started", within: 0) != nil {
                connections.insert(try world.int(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'receipt-worker' AND pid <> pg_backend_pid()
                    """
                ))
                mostInFlight = max(mostInFlight, try world.count(state: "running"))
            }
            await Wait.seconds(0.05)
        } while worker.isRunning
        #expect(await worker.exit(within: 0) == 0, "\(worker.output.suffix(2000))")
        world.forget(worker)
        // Running jobs: calls in flight, and answered ones waiting to be written (which do not count against it).
        #expect(mostInFlight >= maxInFlight, "running jobs at most \(mostInFlight)")
        #expect(connections.max() == 3, "connections seen: \(connections.sorted())")
        #expect(try world.count(state: "verified") == jobs)
    }
}
#endif
