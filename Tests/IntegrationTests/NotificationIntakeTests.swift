import AppStoreSignedData
import FakeAppStore
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import Synchronization
import Testing
import ThreadSupport
@testable import Workers

/// Notification intake under attack: forgeries are pruned after 7 days (applied notifications stay 180), a batch in
/// hand keeps its leases while verification is slow, and verification runs on several threads, a flood of forgeries
/// rejected while the genuine notification behind it is applied. Against a real PostgreSQL; notifications signed at
/// test time by the chain the workers trust, forgeries carrying that chain with a signature that is not its key's.
@Suite("Notification intake", .serialized, .ownThread)
struct NotificationIntakeTests {
    /// A REFUND (Sandbox: no appAppleId needed) of `transactionId`, signed by the trusted test chain.
    static func refund(_ transactionId: String, bundleId: String = "com.example.app") throws -> String {
        let signer = try Harness.signer.get()
        let now = Harness.now
        let transaction: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": transactionId, "bundleId": bundleId,
            "productId": "coins.100", "purchaseDate": now - 86_400_000, "quantity": 1, "type": "Consumable",
            "environment": "Sandbox", "signedDate": now, "revocationDate": now - 1_000, "revocationReason": 0,
        ]
        let notification: [String: Any] = [
            "notificationType": "REFUND", "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": now,
            "data": [
                "bundleId": bundleId, "environment": "Sandbox",
                "signedTransactionInfo": try signer.sign(
                    JSONSerialization.data(withJSONObject: transaction, options: [.sortedKeys])
                ),
            ] as [String: Any],
        ]
        return try signer.sign(JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]))
    }

    /// A forgery: a REFUND with the trusted chain in its header (copied from any genuine notification) and 64 random
    /// bytes for a signature.
    static func forgery(_ transactionId: String) throws -> String {
        let genuine = try refund(transactionId)
        let signature = (0..<64).map { _ in UInt8.random(in: 0...255) }
        return genuine[..<(genuine.lastIndex(of: ".") ?? genuine.endIndex)] + "." + Base64URL.encode(signature)
    }

    static func receive(_ h: Harness, _ payload: String) throws -> Int64 {
        try NotificationInbox(connection: h.db).receive(payload, source: .receiver)
    }

    static func state(_ h: Harness, _ id: Int64) throws -> String? {
        try h.scalar("SELECT state || coalesce(':' || reason, '') FROM receipt_notifications WHERE id = $1", [String(id)])
    }

    // MARK: Retention

    @Test("a rejected forgery is deleted 7 days after its rejection; a verified one of that age and a fresh forgery stay")
    func forgeriesPruned() throws {
        let h = try Harness()
        let oldForgery = try Self.receive(h, try Self.forgery("1000000000000001"))
        let freshForgery = try Self.receive(h, try Self.forgery("1000000000000002"))
        let oldApplied = try Self.receive(h, try Self.refund("1000000000000003"))
        // Rejected for another reason than its signature (an app not ours): kept like any rejected notification.
        _ = try h.db.query("DELETE FROM receipt_apps WHERE bundle_id = 'com.example.other'")
        let otherApp = try Self.receive(h, try Self.refund("1000000000000004", bundleId: "com.example.other"))
        try h.drain()
        #expect(try Self.state(h, otherApp) == "rejected:bundle_mismatch")
        #expect(try Self.state(h, oldForgery) == "rejected:invalid_signature")
        #expect(try Self.state(h, freshForgery) == "rejected:invalid_signature")
        #expect(try Self.state(h, oldApplied) == "applied")
        _ = try h.db.query(
            "UPDATE receipt_notifications SET finished_at = now() - interval '8 days' WHERE id IN ($1, $2, $3)",
            [String(oldForgery), String(oldApplied), String(otherApp)]
        )

        let never = Retention.neverDays * 86_400
        var pruned = 0
        while true {
            let count = try h.store.prune(clearReceiptsAfterSeconds: never, deleteAfterSeconds: never)
            pruned += count
            if count == 0 { break }
        }
        #expect(pruned == 1)
        #expect(try Self.state(h, oldForgery) == nil)
        #expect(try Self.state(h, freshForgery) == "rejected:invalid_signature")
        #expect(try Self.state(h, oldApplied) == "applied")
        #expect(try Self.state(h, otherApp) != nil)

        // Forgeries kept as other rejected notifications (RETENTION_FORGERY_DAYS=0): nothing more goes.
        _ = try h.db.query(
            "UPDATE receipt_notifications SET finished_at = now() - interval '8 days' WHERE id = $1",
            [String(freshForgery)]
        )
        #expect(try h.store.prune(
            clearReceiptsAfterSeconds: never, deleteAfterSeconds: never, deleteForgeriesAfterSeconds: nil
        ) == 0)
        #expect(try Self.state(h, freshForgery) == "rejected:invalid_signature")
    }

    @Test("retention's default keeps forgeries 7 days, and nothing else changes without settings")
    func forgeryRetentionDefault() {
        let retention = Retention.forgeriesOnly
        #expect(retention.deleteForgeriesAfterSeconds == Double(7 * 86_400))
        #expect(retention.deleteAfterSeconds == Retention.neverDays * 86_400)
        #expect(retention.clearReceiptsAfterSeconds == Retention.neverDays * 86_400)
        #expect(Retention(clearReceiptsAfterDays: 30, deleteAfterDays: 90).deleteForgeriesAfterSeconds == Double(7 * 86_400))
    }

    // MARK: Leases and threads

    /// Runs `worker`'s notification loop with `verify` on a thread of its own until `done`, then stops it.
    static func runNotificationLoops(
        _ h: Harness, workers: [Worker], verify: @escaping Worker.NotificationVerification, timeout: Double,
        until done: () throws -> Bool
    ) throws {
        var logger = Logger(label: "test-notifications")
        logger.logLevel = .critical
        let sessions = workers.map { _ in DatabaseSession(url: h.databaseURL, name: "notifications", logger: logger) }
        let threads = try zip(workers, sessions).map { worker, session in
            try DedicatedThread.start(name: "test-notify") { worker.notificationLoop(session, verify: verify) }
        }
        defer {
            for worker in workers { worker.shutdown() }
            for thread in threads { thread.join() }
            for session in sessions { session.close() }
        }
        #expect(try h.waitUntil(timeout, done), "the notifications were not all final within \(timeout) s")
    }

    /// Starts `worker`'s notification loop on a thread of its own, on a connection of its own, verifying with the
    /// harness's chain; the closure returned stops it and waits for it.
    static func startNotificationLoop(_ h: Harness, _ worker: Worker) throws -> () -> Void {
        var logger = Logger(label: "test-notifications")
        logger.logLevel = .critical
        let session = DatabaseSession(url: h.databaseURL, name: "notifications", logger: logger)
        let verifier = h.signedData
        let verify: Worker.NotificationVerification = { (text: String) throws(SignedDataError) in
            try verifier.verifyNotification(text)
        }
        let thread: DedicatedThread
        do {
            thread = try DedicatedThread.start(name: "test-notify") { worker.notificationLoop(session, verify: verify) }
        } catch {
            session.close()
            throw error
        }
        return {
            worker.shutdown()
            thread.join()
            session.close()
        }
    }

    static func worker(_ h: Harness, _ change: (inout WorkerConfiguration) -> Void) -> Worker {
        var logger = Logger(label: "test-worker")
        logger.logLevel = .critical
        return Worker(
            configuration: Harness.configuration(change), databaseURL: h.databaseURL, client: nil,
            signedData: h.signedData, logger: logger
        )
    }

    @Test("with a 6 s lease and 1.2 s per verification, two workers holding 20 (24 s) never claim one twice")
    func slowBatchKeepsItsLease() throws {
        let h = try Harness()
        // However the two claims split them, a worker holds at least 10: 12 s, twice the lease. (A 6 s lease,
        // renewed every 2 s, leaves 4 s of slack for a renewal delayed on a loaded machine; a 2 s one left 1.3 s.)
        let ids = try (0..<20).map { index in try Self.receive(h, try Self.refund("20000000000000\(10 + index)")) }
        let workers = (0..<2).map { _ in
            Self.worker(h) {
                $0.leaseSeconds = 6
                $0.notificationThreads = 1
            }
        }
        let verifier = h.signedData
        let slow: Worker.NotificationVerification = { (text: String) throws(SignedDataError) in
            Thread.sleep(forTimeInterval: 1.2)
            return try verifier.verifyNotification(text)
        }
        try Self.runNotificationLoops(h, workers: workers, verify: slow, timeout: 60) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE finished_at IS NULL") == "0"
        }
        for id in ids { #expect(try Self.state(h, id) == "applied") }
        #expect(try h.scalar("SELECT max(attempts) FROM receipt_notifications") == "1", "a notification was claimed twice")
    }

    @Test("notifications are verified on several threads at once (NOTIFICATION_THREADS)")
    func verifiedConcurrently() throws {
        let h = try Harness()
        for index in 0..<8 { _ = try Self.receive(h, try Self.refund("30000000000000\(10 + index)")) }
        let worker = Self.worker(h) { $0.notificationThreads = 2 }
        let verifier = h.signedData
        // Each call waits (up to 5 s) for another to be under way: verified one at a time, none ever sees two.
        let calls = ConditionLock((inFlight: 0, most: 0))
        let rendezvous: Worker.NotificationVerification = { (text: String) throws(SignedDataError) in
            calls.withLock { $0.inFlight += 1; $0.most = max($0.most, $0.inFlight) }
            _ = calls.wait(until: { $0.most >= 2 }, timeout: .seconds(5))
            defer { calls.withLock { $0.inFlight -= 1 } }
            return try verifier.verifyNotification(text)
        }
        try Self.runNotificationLoops(h, workers: [worker], verify: rendezvous, timeout: 60) {
            try h.scalar("SELECT count(*) FROM receipt_notifications WHERE state <> 'applied'") == "0"
        }
        #expect(calls.withLock { $0.most } >= 2)
    }

    @Test("a flood of forgeries, then a genuine REFUND: every forgery rejected once, the REFUND applied")
    func floodThenGenuine() throws {
        let h = try Harness()
        let payloads = try (0..<500).map { try Self.forgery("40000000000\(10_000 + $0)") }
        _ = try h.db.query(
            "SELECT receive_notification(p, 'receiver') FROM unnest($1::text[]) AS p",
            ["{" + payloads.map { "\"\($0)\"" }.joined(separator: ",") + "}"]
        )
        let genuine = try Self.receive(h, try Self.refund("4000000000099999"))
        try h.drain { $0.notificationThreads = 2 }
        #expect(try Self.state(h, genuine) == "applied")
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_notifications WHERE state = 'rejected' AND reason = 'invalid_signature'"
        ) == "500")
        #expect(try h.scalar("SELECT max(attempts) FROM receipt_notifications") == "1")
        #expect(try h.scalar(
            "SELECT count(*) FROM receipt_events WHERE notification_type = 'REFUND' AND transaction_id = '4000000000099999'"
        ) == "1")
    }
}
