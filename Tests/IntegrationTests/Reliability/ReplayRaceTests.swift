#if os(Linux)
import FakeAppStore
import Foundation
import Glibc
import PostgresClient
import ReceiptQueue
import Synchronization
import Testing

extension Reliability {
    /// The same purchase submitted under many orders at once, verified by three worker processes; the same order
    /// enqueued again and again from many threads.
    @Suite("Reliability: replays racing", .serialized, .ownThread)
    struct ReplayRaceTests {
        /// Enqueues `items` from `threads` threads at once, each with its own connection; returns the job ids in the
        /// order of `items`.
        static func enqueueConcurrently(
            _ world: ProcessWorld, threads: Int, _ items: [(receipt: String, order: String, user: String, product: String)]
        ) throws -> [Int64] {
            let results = Mutex([Int: Result<Int64, any Error>]())
            let url = world.databaseURL
            let start = DispatchSemaphore(value: 0)
            let connected = Mutex(0)
            let group = DispatchGroup()
            for thread in 0..<threads {
                DispatchQueue.global().async(group: group) {
                    let store = Result { JobStore(connection: try PostgresConnection(url)) }
                    connected.withLock { $0 += 1 }
                    start.wait()
                    for index in stride(from: thread, to: items.count, by: threads) {
                        let item = items[index]
                        let result = Result {
                            try store.get().enqueue(
                                receiptData: item.receipt, orderId: item.order, userId: item.user, productId: item.product,
                                bundleId: ProcessWorld.bundle
                            )
                        }
                        results.withLock { $0[index] = result }
                    }
                    if case .success(let store) = store { store.connection.close() }
                }
            }
            while connected.withLock({ $0 }) < threads { Thread.sleep(forTimeInterval: 0.01) }  // all at the gate
            for _ in 0..<threads { start.signal() }
            group.wait()
            let collected = results.withLock { $0 }
            let ids = try items.indices.map { try #require(collected[$0]).get() }
            for id in ids { world.remember(id) }
            return ids
        }

        @Test("one transaction under 40 orders at once, three workers: exactly one credit, every other order refused")
        func fortyOrdersOneTransaction() async throws {
            let rounds = Reliability.pick(3, long: 25)
            let orders = 40
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 30, jitterMilliseconds: 120))
            for _ in 0..<3 { try world.startWorker(["MAX_IN_FLIGHT": "16"]) }
            var duplicates = 0
            for round in 0..<rounds {
                let transaction = "replay-\(round)"
                let purchase = Harness.purchase(transaction, product: "gems")
                let shared = Harness.receipt(purchases: [purchase])
                // Orders 0–19: one user, the same receipt bytes. Orders 20–39: a user each; odd ones send their own copy of
                // the receipt (other bytes, same purchase), as a second device would.
                let items = (0..<orders).map { index -> (receipt: String, order: String, user: String, product: String) in
                    let receipt = index >= 20 && index % 2 == 1 ? Harness.receipt(purchases: [purchase]) : shared
                    return (receipt, "r\(round)-order-\(index)", index < 20 ? "alice-\(round)" : "user-\(round)-\(index)", "gems")
                }
                let ids = try Self.enqueueConcurrently(world, threads: 8, items)
                #expect(Set(ids).count == orders)
                #expect(try await world.waitUntil(60) { try world.unfinished() == 0 })

                let verified = try world.query(
                    "SELECT id::text FROM receipt_jobs WHERE state = 'verified' AND order_id LIKE $1", ["r\(round)-order-%"]
                ).rows
                #expect(verified.count == 1, "round \(round): \(verified.count) orders credited for one transaction")
                duplicates += max(0, verified.count - 1)
                #expect(try world.int(
                    "SELECT count(*) FROM receipt_transactions WHERE transaction_id = $1", [transaction]) == 1)
                let winner = try #require(verified.first?.first.flatMap { $0 })
                let winnerUser = try world.query("SELECT user_id FROM receipt_jobs WHERE id = $1", [winner]).rows.first?.first ?? nil
                for (index, id) in ids.enumerated() where String(id) != winner {
                    let row = try world.query("SELECT state, reason, user_id FROM receipt_jobs WHERE id = $1", [String(id)]).rows[0]
                    #expect(row[0] == "rejected", "order \(index): \(row)")
                    if row[2] == winnerUser {
                        #expect(row[1] == "already_credited", "same user, order \(index): \(row)")
                    } else {
                        #expect(["already_credited", "owned_by_other_user"].contains(row[1] ?? ""), "order \(index): \(row)")
                    }
                }
            }
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == rounds)
            #expect(report.ledgerRows == rounds)
            print("replays: \(rounds) rounds × \(orders) orders of one transaction across 3 workers; double credits \(duplicates); \(report)")
        }

        @Test("two purchases of one product under 40 orders without transaction ids: exactly two credits, one each")
        func fortyOrdersTwoPurchases() async throws {
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 30, jitterMilliseconds: 120))
            for _ in 0..<3 { try world.startWorker(["MAX_IN_FLIGHT": "16"]) }
            let receipt = Harness.receipt(purchases: [
                Harness.purchase("pair-1", product: "gems", agoMs: 5_000), Harness.purchase("pair-2", product: "gems", agoMs: 4_000),
                Harness.purchase("pair-other", product: "coins", agoMs: 3_000),
            ])
            let items = (0..<40).map { (receipt, "pair-order-\($0)", "bob", "gems") }
            _ = try Self.enqueueConcurrently(world, threads: 8, items)
            #expect(try await world.waitUntil(60) { try world.unfinished() == 0 })
            for status in await world.stopWorkers() { #expect(status == 0) }
            let report = try world.invariants()
            #expect(report.count("verified") == 2, "\(report)")
            #expect(report.count(reason: "already_credited") == 38, "\(report)")
            #expect(try world.query("SELECT transaction_id FROM receipt_transactions ORDER BY 1").rows.map { $0[0] } == ["pair-1", "pair-2"])
        }

        /// Batches written by different workers credit the same purchases in different orders: their transactions
        /// can deadlock on the ledger's unique key, and the loser must be written again, not lost or doubled.
        @Test("20 purchases claimed by 300 orders across three workers, batches crossing: one credit per purchase")
        func crossingBatches() async throws {
            let purchases = 20
            let orders = Reliability.pick(300, long: 3000)
            // The same latency for every call: each worker's claimed jobs finish together and are written as one batch.
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 300))
            let receipt = Harness.receipt(purchases: (0..<purchases).map { Harness.purchase("cross-\($0)", product: "gems") })
            var generator = SystemRandomNumberGenerator()
            var items: [(receipt: String, order: String, user: String, product: String)] = []
            var transactions: [String] = []
            for index in 0..<orders {
                items.append((receipt, "cross-order-\(index)", "dave", "gems"))
                transactions.append("cross-\(Int.random(in: 0..<purchases, using: &generator))")
            }
            // Workers up first; then every job arrives in one commit (one NOTIFY, and a poll every 0.1 s besides), so
            // all three claim at about the same moment and their batches come back from Apple, and are written,
            // together.
            let workers = try (0..<3).map { _ in try world.startWorker(["MAX_IN_FLIGHT": "64"]) }
            for worker in workers { #expect(await worker.line(containing: "worker started", within: 20) != nil) }
            // The ledger locked until every worker's first write waits inside its transaction: then all of them go
            // at once, each holding the purchases it already wrote and asking for the others'.
            let locker = try PostgresConnection(world.databaseURL)
            defer { locker.close() }
            let lockerPid = try locker.query("SELECT pg_backend_pid()").rows[0][0]
            try locker.execute("BEGIN")
            try locker.execute("LOCK TABLE receipt_transactions IN SHARE ROW EXCLUSIVE MODE")
            try world.db.withTransaction {
                for (item, transaction) in zip(items, transactions) {
                    world.remember(try world.store.enqueue(
                        receiptData: item.receipt, orderId: item.order, userId: item.user, productId: item.product,
                        transactionId: transaction, bundleId: ProcessWorld.bundle
                    ))
                }
            }
            // Every worker has more jobs than fit in flight (300 > 3 × 64), so each one's first batch comes back from
            // Apple and waits inside its write, all three at once.
            let waiting = try await world.waitUntil(60) {
                try world.int(
                    "SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted AND relation = 'receipt_transactions'::regclass"
                ) == workers.count
            }
            #expect(waiting, "the three workers' writes were never held on the ledger together")
            // Held on the table lock, and on nothing else: each waits for the relation lock the locker holds.
            let held = try world.int(
                """
                SELECT count(*) FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.wait_event = 'relation'
                  AND pg_blocking_pids(a.pid) = ARRAY[$1::integer]
                """,
                [lockerPid]
            )
            #expect(held == workers.count, "\(held) writes blocked by the ledger lock")
            try locker.execute("COMMIT")
            locker.close()
            #expect(try await world.waitUntil(60) { try world.unfinished() == 0 })
            for status in await world.stopWorkers() { #expect(status == 0) }

            // Every write PostgreSQL broke as a deadlock was written again (the batch one job at a time, or the job
            // as a retry), and no write failed otherwise. The workers' backends flush their statistics as they exit.
            #expect(try await world.waitUntil(60) {
                try world.int(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ) == 0
            }, "the workers' database sessions did not end")
            let deadlocks = try world.int("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            let failures = world.workers.flatMap {
                $0.lines(containing: "batch write failed; writing one by one")
                    + $0.lines(containing: "outcome write failed")
            }
            let brokenByDeadlock = failures.filter { $0.contains("SQLSTATE 40P01") }
            #expect(brokenByDeadlock.count == deadlocks, "\(deadlocks) deadlocks: \(failures.prefix(5))")
            #expect(failures.count == brokenByDeadlock.count, "writes failed otherwise: \(failures.prefix(5))")
            let report = try world.invariants()
            let claimed = Set(transactions).count
            #expect(report.count("verified") == claimed, "\(report)")
            #expect(report.ledgerRows == claimed)
            #expect(report.count(reason: "already_credited") == orders - claimed, "\(report)")
            print("crossing batches: \(orders) orders for \(claimed) purchases, \(deadlocks) deadlocks; \(report)")
        }

        /// The deadlock made on purpose: the worker's write waits for the ledger, which a test session has locked; that
        /// session then updates the job rows the write has already updated, and waits for it. PostgreSQL breaks the
        /// cycle in the worker's transaction (its deadlock check comes first: deadlock_timeout 5 s for the workers'
        /// sessions, an hour for the test's), and the worker must write the outcomes again. Should a write made again
        /// meet the test session's update once more, that is another deadlock, and another write made again: each
        /// deadlock must be one write the worker logged and made again.
        @Test("a write broken by a deadlock is written again: each purchase credited once, nothing lost or rescued")
        func deadlockedWrite() async throws {
            let jobs = 10
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 300))
            try world.query(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET deadlock_timeout = %L', current_database(), '5s'); END $$"
            )
            let locker = try PostgresConnection(world.databaseURL)
            defer { locker.close() }
            let lockerPid = try locker.query("SELECT pg_backend_pid()").rows[0][0]
            try locker.execute("SET deadlock_timeout = '1h'")
            try locker.execute("BEGIN")
            try locker.execute("LOCK TABLE receipt_transactions IN SHARE ROW EXCLUSIVE MODE")
            try world.enqueueAll((0..<jobs).map { index in
                (Harness.receipt(purchases: [Harness.purchase("deadlock-\(index)", product: "gems")]),
                 "deadlock-order-\(index)", "user-\(index)", "gems")
            })
            // Leases far longer than the wait: no rescue muddles the count.
            let worker = try world.startWorker(["LEASE_SECONDS": "120", "MAX_IN_FLIGHT": "\(jobs)"])
            let blocked = """
                SELECT backend_xid::text FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.wait_event = 'relation'
                  AND pg_blocking_pids(a.pid) = ARRAY[$1::integer]
                """
            var write: String?
            #expect(
                try await world.waitUntil(60) {
                    write = try world.query(blocked, [lockerPid]).rows.first?.first ?? nil
                    return write != nil
                },
                "the worker's write never waited on the ledger: \(worker.output.suffix(2000))"
            )
            // The rows the waiting write has updated (their visible versions carry its transaction id as xmax): the
            // update waits for the write, closing the cycle, until PostgreSQL aborts the write.
            let xid: String = try #require(write)
            let updated = try locker.query("UPDATE receipt_jobs SET updated_at = updated_at WHERE xmax::text = $1", [xid])
            #expect(updated.affectedRows > 0, "\(updated.commandTag)")
            try locker.execute("COMMIT")
            locker.close()
            #expect(try await world.waitUntil(120) { try world.unfinished() == 0 }, "\(worker.output.suffix(2000))")
            for status in await world.stopWorkers() { #expect(status == 0) }

            #expect(try await world.waitUntil(60) {
                try world.int(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ) == 0
            }, "the worker's database sessions did not end")
            let deadlocks = try world.int("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            let failures = worker.lines(containing: "batch write failed; writing one by one")
                + worker.lines(containing: "outcome write failed")
                + worker.lines(containing: "outcome write lost to a concurrent transaction; writing it again")
            #expect(deadlocks >= 1, "the cycle was not broken as a deadlock")
            #expect(failures.count == deadlocks, "\(deadlocks) deadlocks: \(failures)")
            #expect(failures.allSatisfy { $0.contains("SQLSTATE 40P01") }, "\(failures)")
            let report = try world.invariants()
            #expect(report.count("verified") == jobs, "\(report)")
            #expect(report.ledgerRows == jobs)
            #expect(report.rescues == 0, "\(report)")
            print("deadlocked write: \(jobs) jobs, \(deadlocks) deadlocks, each a write made again; \(report)")
        }

        /// Retention deletes a delivered verdict; the app then sends its receipt again for that old order — the
        /// receipt now also holds the user's next purchase, which belongs to their new order.
        @Test("an order sent again after retention deleted its job is not credited a second purchase")
        func resubmittedAfterRetention() async throws {
            let h = try Harness()
            let first = Harness.purchase("retained-1", product: "gems", agoMs: 600_000)
            let old = try h.enqueue(Harness.receipt(purchases: [first]), order: "old-order", product: "gems")
            try await h.drainWithoutBlocking()
            #expect(try h.job(old)["state"] == "verified")
            #expect(try h.scalar("SELECT mark_verdict_delivered($1)", [String(old)]) == "t")
            _ = try h.db.query("SELECT receipt_prune(interval '0', interval '0')")
            #expect(try h.scalar("SELECT count(*) FROM receipt_jobs") == "0", "retention did not delete the verdict")

            let second = Harness.purchase("retained-2", product: "gems", agoMs: 1_000)
            let both = Harness.receipt(purchases: [first, second])
            let again = try h.enqueue(both, order: "old-order", product: "gems")
            let new = try h.enqueue(both, order: "new-order", product: "gems")
            try await h.drainWithoutBlocking()
            #expect(try h.job(again)["state"] == "verified", "the old order is still paid for")
            #expect(try h.scalar("SELECT count(*) FROM receipt_transactions WHERE order_id = 'old-order'") == "1",
                    "one order credited with two purchases")
            #expect(try h.job(new)["state"] == "verified", "the new order, paid for, is refused: \((try? h.job(new)) ?? [:])")
        }

        @Test("the same order enqueued 400 times from 16 threads, before and while its job runs: one job")
        func duplicateEnqueues() async throws {
            // The fake answers after 15 s, so that the 240 enqueues below all come while the job runs even on a
            // loaded machine (3 s was a narrow window); the worker's lease (10 s) and timeout (60 s) leave room for
            // that call, so that Apple is asked once.
            let world = try ProcessWorld(fake: FakeAppStoreConfiguration(latencyMilliseconds: 15_000))
            let receipt = Harness.receipt(purchases: [Harness.purchase("dup-1", product: "gems")])
            let item = (receipt: receipt, order: "dup-order", user: "carol", product: "gems")

            // Racing the very first insert: no job exists yet.
            let first = try Self.enqueueConcurrently(world, threads: 16, Array(repeating: item, count: 160))
            #expect(Set(first).count == 1, "the first enqueues made \(Set(first).count) jobs")
            let id = try #require(first.first)

            // While the job is running (the fake answers after 15 s).
            try world.startWorker(["LEASE_SECONDS": "10", "APPLE_TIMEOUT_SECONDS": "60"])
            #expect(try await world.waitUntil(20) { try world.count(state: "running") == 1 })
            let during = try Self.enqueueConcurrently(world, threads: 16, Array(repeating: item, count: 240))
            #expect(Set(during) == [id])
            #expect(try world.query("SELECT state FROM receipt_jobs WHERE id = $1", [String(id)]).rows[0][0] == "running")

            // The same open order for another user or product is a conflict, not a second job.
            let conflict = #expect(throws: PostgresError.self) {
                try world.store.enqueue(receiptData: receipt, orderId: "dup-order", userId: "mallory", productId: "gems",
                                        bundleId: ProcessWorld.bundle)
            }
            #expect(conflict?.sqlState == "RW409")
            #expect(try await world.waitUntil(60) { try world.unfinished() == 0 })
            // After the verdict, still the same job.
            #expect(try world.enqueue(receipt, order: "dup-order", user: "carol", product: "gems") == id)
            for status in await world.stopWorkers() { #expect(status == 0) }
            #expect(try world.int("SELECT count(*) FROM receipt_jobs WHERE order_id = 'dup-order'") == 1)
            let report = try world.invariants()
            #expect(report.count("verified") == 1)
            #expect(try world.fakeServer.stats().total == 1, "Apple was asked more than once for one job")
        }
    }
}
#endif
