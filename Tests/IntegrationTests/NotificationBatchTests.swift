import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Testing
import ThreadSupport
@testable import Workers

/// Notifications woken by NOTIFY and written back in batches (issue 27): a notification is picked up long before
/// the poll would find it; a batch applies each notification once, also when one of it fails or its writer dies
/// mid-batch. Against a real PostgreSQL; notifications signed at test time by the chain the workers trust.
@Suite("Notification batches", .serialized, .ownThread)
struct NotificationBatchTests {
    /// A REFUND (Sandbox) of `transactionId`, signed by the trusted test chain, with `uuid` as its notificationUUID.
    static func refund(_ transactionId: String, uuid: String = UUID().uuidString) throws -> String {
        let signer = try Harness.signer.get()
        let now = Harness.now
        let transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": "com.example.app",
            "productId": "coins.100", "purchaseDate": now - 86_400_000, "quantity": 1, "type": "Consumable",
            "environment": "Sandbox", "signedDate": now, "revocationDate": now - 1_000, "revocationReason": 0,
        ]
        let notification: [String: Any] = [
            "notificationType": "REFUND", "notificationUUID": uuid, "version": "2.0", "signedDate": now,
            "data": [
                "bundleId": "com.example.app", "environment": "Sandbox",
                "signedTransactionInfo": try signer.sign(
                    JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])
                ),
            ] as [String: Any],
        ]
        return try signer.sign(JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]))
    }

    static func receive(_ h: Harness, _ payload: String) throws -> Int64 {
        try NotificationInbox(connection: h.db).receive(payload, source: .receiver)
    }

    static func state(_ h: Harness, _ id: Int64) throws -> String? {
        try h.scalar("SELECT state || coalesce(':' || reason, '') FROM receipt_notifications WHERE id = $1", [String(id)])
    }

    static func events(_ h: Harness, _ transactionId: String) throws -> String? {
        try h.scalar("SELECT count(*) FROM receipt_events WHERE transaction_id = $1", [transactionId])
    }

    /// What the worker would write back for each claimed notification: verified with the harness's verifier.
    static func verdicts(
        _ h: Harness, _ claimed: [ClaimedNotification]
    ) -> [(notification: ClaimedNotification, result: NotificationOutcome)] {
        let verifier = h.signedData
        return claimed.sorted { $0.id < $1.id }.map { notification in
            let result = NotificationResult.result(
                verifying: notification,
                with: { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) },
                sandboxPolicy: .accept, retry: RetryPolicy(), random: 0.5
            )
            return (notification, result)
        }
    }

    // MARK: Wake-up

    @Test("a notification received while the worker idles is applied at once, not at the next poll (30 s away)")
    func listenWakesTheWorker() throws {
        let h = try Harness()
        let worker = NotificationIntakeTests.worker(h) { $0.schedulerIntervalSeconds = 30 }
        let stop = try NotificationIntakeTests.startNotificationLoop(h, worker)
        defer { stop() }
        // The loop's first claim (nothing due) is made, and it is waiting: its next poll is 30 s away.
        #expect(try h.waitUntil(10) {
            try h.scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ) == "1"
        })
        Thread.sleep(forTimeInterval: 0.5)
        let id = try Self.receive(h, try Self.refund("5000000000000001"))
        let received = Date()
        #expect(try h.waitUntil(10) { try Self.state(h, id) == "applied" }, "not applied within 10 s (no wake-up)")
        #expect(Date().timeIntervalSince(received) < 10)
    }

    // MARK: Batches

    @Test("a batch applies each notification once: two payloads of one UUID are applied and duplicate, again is lost")
    func batchAppliesOnce() throws {
        let h = try Harness()
        let uuid = UUID().uuidString
        var ids: [Int64] = []
        for index in 0..<4 { ids.append(try Self.receive(h, try Self.refund("510000000000000\(index)"))) }
        // Another payload (another signature) claiming the first one's UUID: Apple's retry, re-signed.
        let first = try Self.receive(h, try Self.refund("5100000000000009", uuid: uuid))
        let second = try Self.receive(h, try Self.refund("5100000000000009", uuid: uuid))
        #expect(first != second)
        let claimed = try h.store.claimNotifications(worker: "batch", limit: 10, leaseSeconds: 30)
        #expect(claimed.count == 6)
        let batch = Self.verdicts(h, claimed)
        let written = try h.store.applyNotifications(batch)
        #expect(written.count == 6)
        for id in ids { #expect(written[id]?.state == "applied") }
        #expect(Set([written[first]?.state, written[second]?.state]) == Set(["applied", "duplicate"]))
        for index in 0..<4 { #expect(try Self.events(h, "510000000000000\(index)") == "1") }
        #expect(try Self.events(h, "5100000000000009") == "1")

        // The same batch again (a write-back retried after its answer was lost): nothing is applied twice.
        let again = try h.store.applyNotifications(batch)
        #expect(Set(again.values.map(\.state)) == ["lost"])
        for index in 0..<4 { #expect(try Self.events(h, "510000000000000\(index)") == "1") }
        #expect(try Self.events(h, "5100000000000009") == "1")
    }

    @Test("forgeries are rejected set-based under their own leases; one whose lease is not ours is left alone")
    func forgeriesRejectedSetBased() throws {
        let h = try Harness()
        let ids = try (0..<3).map { try Self.receive(h, try NotificationIntakeTests.forgery("520000000000000\($0)")) }
        let claimed = try h.store.claimNotifications(worker: "reject", limit: 10, leaseSeconds: 30)
        var batch = Self.verdicts(h, claimed)
        #expect(batch.allSatisfy { $0.result.kind == .rejected && $0.result.reason == .invalidSignature })
        // The last one's lease is someone else's by now.
        batch[2].notification.leaseToken = UUID().uuidString
        let rejected = try h.store.rejectNotifications(batch)
        #expect(rejected == Set(ids.prefix(2)))
        #expect(try Self.state(h, ids[0]) == "rejected:invalid_signature")
        #expect(try Self.state(h, ids[1]) == "rejected:invalid_signature")
        #expect(try Self.state(h, ids[2]) == "running")
    }

    @Test("a batch with a notification the database cannot apply: nothing of it written; the worker applies the rest")
    func failingItemHoldsUpNoOther() throws {
        let h = try Harness()
        var ids: [Int64] = []
        for index in 0..<3 { ids.append(try Self.receive(h, try Self.refund("530000000000000\(index)"))) }
        // Verified like the others, but applying it fails (as a bug or a constraint of the database would): its event
        // is refused by a trigger made for the test.
        let bad = try Self.receive(h, try Self.refund("5300000000000009"))
        _ = try h.db.query(
            """
            CREATE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.transaction_id = '5300000000000009' THEN RAISE EXCEPTION 'refused for the test'; END IF;
                RETURN NEW;
            END $$;
            """
        )
        _ = try h.db.query(
            "CREATE TRIGGER test_refuse_event BEFORE INSERT ON receipt_events FOR EACH ROW EXECUTE FUNCTION test_refuse_event()"
        )
        for index in 3..<6 { ids.append(try Self.receive(h, try Self.refund("530000000000000\(index)"))) }

        // Written together, the batch fails as a whole: nothing of it is applied.
        let claimed = try h.store.claimNotifications(worker: "mixed", limit: 10, leaseSeconds: 2)
        let batch = Self.verdicts(h, claimed)
        #expect(batch.first { $0.notification.id == bad }?.result.kind == .verified)
        #expect(throws: PostgresError.self) { try h.store.applyNotifications(batch) }
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'running'") == "7")
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "0")

        // The worker, once the leases ran out: its batch fails, each is written alone, six applied once.
        #expect(try h.waitUntil(10) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE lease_until >= now()") == "0"
        })
        let worker = NotificationIntakeTests.worker(h) { $0.leaseSeconds = 30 }
        let verifier = h.signedData
        try NotificationIntakeTests.runNotificationLoops(
            h, workers: [worker], verify: { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) },
            timeout: 60
        ) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'applied'") == "6"
        }
        for id in ids { #expect(try Self.state(h, id) == "applied") }
        for index in 0..<6 { #expect(try Self.events(h, "530000000000000\(index)") == "1") }
        #expect(try Self.state(h, bad) == "running", "the failing one waits for its lease, to be claimed again")
        #expect(try h.scalar("SELECT max(attempts) FROM receipt_notifications") == "2")
    }

    @Test("a writer that dies mid-batch leaves nothing applied; the notifications are claimed again and applied once")
    func crashMidBatch() throws {
        let h = try Harness()
        let uuids = (0..<3).map { _ in UUID().uuidString.lowercased() }
        let ids = try (0..<3).map { try Self.receive(h, try Self.refund("540000000000000\($0)", uuid: uuids[$0])) }
        let claimed = try h.store.claimNotifications(worker: "doomed", limit: 10, leaseSeconds: 2)
        let batch = Self.verdicts(h, claimed)

        // The second notification's UUID lock is held elsewhere: the batch applies the first, then waits there.
        let blocker = try PostgresConnection(h.databaseURL)
        defer { blocker.close() }
        _ = try blocker.query("SELECT pg_advisory_lock(hashtextextended('receipt_notification:' || $1, 0))", [uuids[1]])
        let url = h.databaseURL
        let writerPid = ConditionLock<Int64?>(nil)
        /// What the batch call did: "written", or its error.
        let outcome = ConditionLock<String?>(nil)
        let thread = try DedicatedThread.start(name: "doomed-writer") {
            do {
                let writer = try PostgresConnection(url)
                defer { writer.close() }
                let pid = try writer.query("SELECT pg_backend_pid() AS pid").int64(0, "pid")
                writerPid.withLock { $0 = pid }
                _ = try JobStore(connection: writer).applyNotifications(batch)
                outcome.withLock { $0 = "written" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }
        let started = writerPid.wait(for: { $0 }, timeout: .seconds(10))
        let pid = try #require(started)
        #expect(try h.waitUntil(10) {
            try h.scalar("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [String(pid)]) == "Lock"
        }, "the batch did not reach the second notification")
        // The writer dies mid-batch (as a worker killed there: its connection ends, its transaction with it).
        _ = try h.db.query("SELECT pg_terminate_backend($1)", [String(pid)])
        thread.join()
        let written = try #require(outcome.withLock { $0 })
        #expect(written != "written")
        _ = try blocker.query("SELECT pg_advisory_unlock_all()")
        for id in ids { #expect(try Self.state(h, id) == "running") }
        #expect(try h.scalar("SELECT count(*) FROM receipt_events") == "0")

        // Another worker, once the leases ran out: each applied once.
        let worker = NotificationIntakeTests.worker(h) { $0.leaseSeconds = 30 }
        let verifier = h.signedData
        try NotificationIntakeTests.runNotificationLoops(
            h, workers: [worker], verify: { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) },
            timeout: 60
        ) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'applied'") == "3"
        }
        for index in 0..<3 { #expect(try Self.events(h, "540000000000000\(index)") == "1") }
        #expect(try h.scalar("SELECT min(attempts) FROM receipt_notifications") == "2")
    }

    @Test("a worker stopping gives back what it had not verified: claimable at once, the attempt not counted")
    func stopGivesBack() throws {
        let h = try Harness()
        let ids = try (0..<6).map { try Self.receive(h, try Self.refund("550000000000000\($0)")) }
        let worker = NotificationIntakeTests.worker(h) {
            $0.notificationThreads = 1
            $0.leaseSeconds = 60
        }
        var logger = Logger(label: "test-notifications")
        logger.logLevel = .critical
        let session = DatabaseSession(url: h.databaseURL, name: "notifications", logger: logger)
        let started = ConditionLock(false)
        let thread = try DedicatedThread.start(name: "test-notify") {
            // The first verification waits for the stop: the other five are still waiting for the thread.
            worker.notificationLoop(session) { (text: String) throws(SignedDataError) in
                started.withLock { $0 = true }
                while !worker.state.isStopping { Thread.sleep(forTimeInterval: 0.01) }
                throw SignedDataError(.badSignature, "stopped")
            }
        }
        started.wait(until: { $0 })
        worker.shutdown()
        thread.join()
        session.close()
        let states = try ids.map { try Self.state(h, $0) ?? "missing" }
        #expect(states.filter { $0 == "queued" }.count == 5, "\(states)")
        #expect(try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state = 'queued' AND attempts = 0") == "5")
    }
}
