#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import LocalPostgres
import PostgresClient
import ReceiptQueue
import Testing

extension Reliability {
    /// The primary lost mid-wave and a synchronous streaming standby promoted, under real worker processes given both
    /// hosts (docs/deployment.md, "Failover").
    @Suite("Reliability: failover to a synchronous standby", .serialized, .ownThread)
    struct FailoverTests {
        @Test("Primary stopped (immediate) mid-wave, synchronous standby promoted: every job final, no verdict lost, no double credit")
        func promotedMidWave() async throws {
            let jobs = Reliability.pick(300, long: 3000)
            let late = 20
            let world = try ProcessWorld(
                ownCluster: true, fake: FakeAppStoreConfiguration(latencyMilliseconds: 200, jitterMilliseconds: 200)
            )
            let primary = try #require(world.cluster)
            let standby = try primary.startStandby()
            defer { standby.stop() }
            // Synchronous: a commit returns once the standby has flushed it.
            try world.query("ALTER SYSTEM SET synchronous_standby_names = '*'")
            try world.query("SELECT pg_reload_conf()")
            #expect(
                try await world.waitUntil(30) {
                    try world.int("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1
                },
                "the standby never became synchronous"
            )
            try world.enqueueAll(DatabaseOutageTests.receipts(jobs, prefix: "failover"))
            let database = "rw_reliability"
            let bothHosts = "postgresql://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/\(database)"
                + "?target_session_attrs=read-write"
            // Few calls in flight, so the wave lasts (about 25 verdicts a second for 300 jobs) and the primary is lost
            // in the middle of it on a fast machine too (with 16 in flight a quiet CI machine finished the 300 before
            // the check below saw a third of them).
            let inFlight = jobs > 300 ? "16" : "4"
            for _ in 0..<2 { try world.startWorker(["DATABASE_URL": bothHosts, "MAX_IN_FLIGHT": inFlight]) }
            #expect(try await world.waitUntil(60) { try world.count(state: "verified") >= jobs / 3 })

            // What the primary shows as committed now: with synchronous replication, on the standby too.
            let finalBefore = try world.query(
                "SELECT id::text, state FROM receipt_jobs WHERE state IN ('verified', 'rejected', 'dead')"
            ).rows
            let ledgerBefore = try world.query("SELECT credit_key, job_id::text FROM receipt_transactions").rows
            world.db.close()
            try primary.stopServer(mode: "immediate")
            let lost = Date()
            #expect(jobs - finalBefore.count > 0, "the wave was over before the primary was lost")
            try standby.promote()

            let db = try PostgresConnection(standby.url(database: database))
            defer { db.close() }
            func int(_ sql: String) throws -> Int { Int(try db.query(sql).rows.first?.first.flatMap { $0 } ?? "") ?? -1 }
            // The API layer goes on enqueueing on the new primary.
            let store = JobStore(connection: db)
            for index in 0..<late {
                let item = DatabaseOutageTests.receipts(1, prefix: "failover-late-\(index)")[0]
                _ = try store.enqueue(
                    receiptData: item.receipt, orderId: item.order, userId: item.user, productId: item.product,
                    transactionId: nil, bundleId: ProcessWorld.bundle
                )
            }
            let unfinished = "SELECT count(*) FROM receipt_jobs WHERE state NOT IN ('verified', 'rejected', 'dead')"
            #expect(try await world.waitUntil(90) { try int(unfinished) == 0 }, "unfinished: \((try? int(unfinished)) ?? -1)")
            let recovered = Date().timeIntervalSince(lost)
            for worker in world.workers {
                #expect(worker.isRunning, "a worker exited in the failover: \(worker.output.suffix(2000))")
                // It noticed the loss, and found the new primary.
                #expect(!worker.lines(containing: "database reachable again").isEmpty, "\(worker.output.suffix(2000))")
            }
            for status in await world.stopWorkers() { #expect(status == 0) }

            let finalAfter = Set(
                try db.query("SELECT id::text, state FROM receipt_jobs WHERE state IN ('verified', 'rejected', 'dead')")
                    .rows
            )
            let verdictsLost = finalBefore.filter { !finalAfter.contains($0) }
            #expect(verdictsLost.isEmpty, "verdicts committed on the lost primary are gone: \(verdictsLost.prefix(5))")
            let ledgerAfter = Set(try db.query("SELECT credit_key, job_id::text FROM receipt_transactions").rows)
            let creditsLost = ledgerBefore.filter { !ledgerAfter.contains($0) }
            #expect(creditsLost.isEmpty, "ledger rows committed on the lost primary are gone: \(creditsLost.prefix(5))")
            let report = try Invariants.check(db, enqueued: jobs + late)
            #expect(report.count("verified") == jobs + late, "\(report)")
            #expect(report.ledgerRows == jobs + late, "\(report)")
            #expect(
                try int("SELECT count(*) FROM (SELECT order_id FROM receipt_transactions GROUP BY order_id HAVING count(*) > 1) o")
                    == 0
            )
            print("failover: \(jobs) + \(late) jobs, \(finalBefore.count) verdicts and \(ledgerBefore.count) ledger rows "
                + "checked after promotion, every job final \(String(format: "%.1f", recovered)) s after the primary was "
                + "lost; \(report)")
        }
    }
}
#endif
