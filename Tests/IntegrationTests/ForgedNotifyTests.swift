#if os(Linux)
import Foundation
import PostgresClient
import Testing

/// Attack 3 (issue 36): PostgreSQL has no privilege on NOTIFY, so any login (the API layer's `receipt_api`, or one
/// with no grant at all) can send any payload on any channel, and a listener receives it exactly as a genuine one.
/// The defence: a payload carries only the ids needed to re-read the row (docs/security.md), and nothing in the
/// service takes a payload for a fact: the workers' LISTENs only wake them, and what they claim is what the tables say.
@Suite("Forged NOTIFY: payloads are ids, hints to re-read a row, never facts", .serialized)
struct ForgedNotifyTests {
    /// Every channel receipt-worker sends on.
    static let channels = ["receipt_jobs", "receipt_jobs_done", "receipt_notifications", "receipt_events",
                           "receipt_revocations"]

    /// Runs `statement` as a role with no privilege at all (SET ROLE on the harness's connection): what any login
    /// may do.
    static func asNobody(_ h: Harness, _ statement: String) throws {
        let role = "rw_forger_\(getpid())"
        _ = try h.db.query("""
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(role)') THEN CREATE ROLE \(role) NOLOGIN; END IF;
            END $$
            """)
        _ = try h.db.query("SET ROLE \(role)")
        defer { _ = try? h.db.query("RESET ROLE") }
        _ = try h.db.query(statement)
    }

    @Test("what receipt-worker sends on each channel is an id (or nothing): a refund's pipeline, every payload read")
    func genuinePayloadsAreIds() throws {
        let h = try Harness()
        let listener = try PostgresConnection(h.databaseURL)
        defer { listener.close() }
        for channel in Self.channels { try listener.listen(channel) }
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("9101")]), order: "n-1")
        try h.drain()
        _ = try h.enqueue(
            Harness.receipt(purchases: [Harness.purchase("9101", cancelled: true)]), order: "n-2", transaction: "9101"
        )
        try h.drain()
        _ = try h.db.query("SELECT receive_notification('aaa.bbb.ccc')")
        var received: [PostgresNotification] = []
        let marker = "marker-\(UUID().uuidString)"
        _ = try h.db.query("SELECT pg_notify('receipt_jobs', $1)", [marker])
        let deadline = Date(timeIntervalSinceNow: 60)
        while !received.contains(where: { $0.payload == marker }) && Date() < deadline {
            received += try listener.waitForNotifications(timeoutMilliseconds: 500)
        }
        received.removeAll { $0.payload == marker }
        let seen = Set(received.map(\.channel))
        #expect(seen == Set(Self.channels), "channels heard: \(seen.sorted())")
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions WHERE transaction_id = '9101'"))
        for note in received {
            switch note.channel {
            case "receipt_jobs":
                #expect(note.payload.isEmpty, "\(note.channel): \(note.payload)")
            case "receipt_revocations":
                #expect(note.payload == #"{"ledger_id" : \#(ledger)}"#, "\(note.channel): \(note.payload)")
            default:
                #expect(Int64(note.payload) != nil, "\(note.channel): \(note.payload)")
            }
        }
    }

    @Test("a forged receipt_revocations reaches a listener verbatim; re-reading the row, as the docs say, finds no revocation")
    func forgedRevocationIsAHintOnly() throws {
        let h = try Harness()
        _ = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("9201")]), order: "f-1", user: "alice")
        try h.drain()
        let ledger = try #require(try h.scalar("SELECT id FROM receipt_transactions WHERE transaction_id = '9201'"))
        let listener = try PostgresConnection(h.databaseURL)
        defer { listener.close() }
        try listener.listen("receipt_revocations")
        let forged = #"{"ledger_id":\#(ledger),"user_id":"alice","product_id":"pro.monthly","environment":"Production"}"#
        try Self.asNobody(h, "NOTIFY receipt_revocations, '\(forged)'")
        // Delivered exactly as a genuine one would be: nothing tells them apart.
        #expect(try h.notificationsSoFar(on: listener, channel: "receipt_revocations") == [forged])
        // What docs/refunds-and-revenue.md tells the listener to do with it: read the row.
        let reread = try h.db.query(
            "SELECT user_id, product_id FROM receipt_transactions WHERE id = $1 AND revoked_at IS NOT NULL", [ledger]
        )
        #expect(reread.rows.isEmpty, "the forged hint names no revocation the ledger holds")
    }

    @Test("forged NOTIFYs naming a job and a notification not due: the workers wake, and claim only what is due")
    func forgedWakeUpsClaimNothingNotDue() throws {
        let h = try Harness()
        let later = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("9301")]), order: "w-later")
        _ = try h.db.query("UPDATE receipt_jobs SET run_at = now() + interval '1 hour' WHERE id = $1", [String(later)])
        let laterNote = try #require(try h.scalar("SELECT receive_notification('later.later.later')"))
        _ = try h.db.query(
            "UPDATE receipt_notifications SET run_at = now() + interval '1 hour' WHERE id = $1", [laterNote]
        )
        let threads = try h.startWorkers(1) { $0.drain = false }
        defer { _ = threads.map { $0.stop(waitingUpTo: 30) } }
        // The forgeries name the rows that are not due, as if they had just been enqueued.
        try Self.asNobody(h, "NOTIFY receipt_jobs, '\(later)'")
        try Self.asNobody(h, "NOTIFY receipt_notifications, '\(laterNote)'")
        // Then genuine work: once the worker has finished it, it has claimed since the forgeries came.
        let due = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("9302")]), order: "w-due")
        let dueNote = try #require(try h.scalar("SELECT receive_notification('due.due.due')"))
        let done = try h.waitUntil(60) {
            try h.job(due)["finished"] == "true"
                && h.scalar("SELECT state IN ('applied', 'duplicate', 'rejected', 'dead') FROM receipt_notifications "
                    + "WHERE id = $1", [dueNote]) == "t"
        }
        #expect(done, "the due job and notification were not finished")
        let job = try h.job(later)
        #expect(job["state"] == "queued" && job["attempts"] == "0", "\(job)")
        #expect(try h.db.query("SELECT state, attempts FROM receipt_notifications WHERE id = $1", [laterNote]).rows
            == [["queued", "0"]])
        try Harness.rethrow(threads)
    }
}
#endif
