import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// A job or notification whose processing ends its worker (a crash on its input, a kill) is claimed again when its
/// lease expires, at most MAX_ATTEMPTS times: then it is set aside (`dead`, `retries_exhausted`, its last error
/// saying why) instead of killing every worker that picks it up.
@Suite("Set aside what ends its worker", .serialized, .ownThread)
struct SetAsideTests {
    static let maxAttempts = 3

    @Test("a notification whose worker ends on every claim is claimed again until MAX_ATTEMPTS claims, then dead")
    func notificationSetAside() throws {
        let h = try Harness()
        let id = try #require(try h.scalar("SELECT receive_notification($1)", ["eyJhbGciOiJFUzI1NiJ9.e30.c2ln"]))
        for claim in 1...Self.maxAttempts {
            let claimed = try h.store.claimNotifications(
                worker: "doomed-\(claim)", limit: 10, leaseSeconds: 30, maxAttempts: Self.maxAttempts
            )
            #expect(claimed.map(\.id) == [Int64(id)], "claim \(claim) hands the notification out again")
            #expect(claimed.first?.attempts == claim)
            // The worker ends while verifying it: no outcome is written and its lease runs out.
            try expireLeases(h, table: "receipt_notifications")
        }
        let after = try h.store.claimNotifications(
            worker: "next", limit: 10, leaseSeconds: 30, maxAttempts: Self.maxAttempts
        )
        #expect(after.isEmpty, "claimed a \(Self.maxAttempts + 1)th time: \(after.map(\.attempts))")
        let row = try h.db.query(
            "SELECT state, reason, last_error, attempts, finished_at IS NOT NULL AS finished, lease_token "
                + "FROM receipt_notifications WHERE id = $1", [id]
        )
        #expect(row[0, "state"] == "dead")
        #expect(row[0, "reason"] == "retries_exhausted")
        #expect(row[0, "attempts"] == String(Self.maxAttempts))
        #expect(row[0, "finished"] == "t")
        #expect(row[0, "lease_token"] == nil)
        let error = row[0, "last_error"] ?? ""
        #expect(error.hasPrefix("set aside after 3 claims: the worker processing it ended (crash or kill)"), "\(error)")
        #expect(error.contains("worker doomed-3"), "\(error)")
        #expect(error.contains("lease expired: worker doomed-2 stopped answering (claim 2)"), "\(error)")
        // Still set aside on later claims: it does not come back unless an operator requeues it.
        #expect(try h.store.claimNotifications(worker: "later", limit: 10, leaseSeconds: 30, maxAttempts: 3).isEmpty)
        #expect(try h.store.requeueDeadNotifications(note: "fixed the worker") == 1)
        #expect(try h.store.claimNotifications(worker: "fixed", limit: 10, leaseSeconds: 30, maxAttempts: 3).count == 1)
    }

    @Test("a notification claimed before its lease expired is not taken, and one with claims left is requeued")
    func notificationRequeuedBeforeLimit() throws {
        let h = try Harness()
        _ = try h.scalar("SELECT receive_notification($1)", ["eyJhbGciOiJFUzI1NiJ9.e30.b3RoZXI"])
        #expect(try h.store.claimNotifications(worker: "a", limit: 10, leaseSeconds: 30, maxAttempts: 2).count == 1)
        #expect(try h.store.claimNotifications(worker: "b", limit: 10, leaseSeconds: 30, maxAttempts: 2).isEmpty,
                "the lease of a live worker is respected")
        try expireLeases(h, table: "receipt_notifications")
        let again = try h.store.claimNotifications(worker: "c", limit: 10, leaseSeconds: 30, maxAttempts: 2)
        #expect(again.map(\.attempts) == [2])
        #expect(try h.scalar("SELECT state FROM receipt_notifications") == "running")
    }

    @Test("a job whose worker ends on every claim is rescued until MAX_ATTEMPTS claims, then dead")
    func jobSetAside() throws {
        let h = try Harness()
        let id = try h.enqueue(Harness.receipt(purchases: [Harness.purchase("crash-1")]), order: "ends-its-worker")
        for claim in 1...Self.maxAttempts {
            let claimed = try h.store.claim(worker: "doomed-\(claim)", limit: 10, leaseSeconds: 30)
            #expect(claimed.map(\.id) == [id], "claim \(claim)")
            try expireLeases(h, table: "receipt_jobs")
            let swept = try h.store.sweep(maxAttempts: Self.maxAttempts)
            let job = try h.job(id)
            if claim < Self.maxAttempts {
                #expect(swept.rescued == 1 && swept.dead == 0, "claim \(claim): \(swept)")
                #expect(job["state"] == "queued", "claim \(claim): \(job)")
                #expect(job["last_error"]?.hasPrefix("lease expired: worker doomed-\(claim)") == true, "\(job)")
            } else {
                #expect(swept.rescued == 0 && swept.dead == 1, "\(swept)")
                #expect(job["state"] == "dead", "\(job)")
                #expect(job["reason"] == "retries_exhausted")
                let error = job["last_error"] ?? ""
                #expect(
                    error.hasPrefix(
                        "set aside after 3 claims: the worker processing it ended (crash or kill) 3 times, "
                            + "last worker doomed-3"
                    ),
                    "\(error)"
                )
            }
        }
        #expect(try h.store.claim(worker: "next", limit: 10, leaseSeconds: 30).isEmpty)
    }

    /// What a worker that ended leaves behind: its leases run out.
    private func expireLeases(_ h: Harness, table: String) throws {
        _ = try h.db.query("UPDATE \(table) SET lease_until = now() - interval '1 second' WHERE state = 'running'")
    }
}
