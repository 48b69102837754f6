import Foundation

/// A notification a worker holds: its row in receipt_notifications and the lease that guards the write-back.
public struct ClaimedNotification: Sendable, Hashable {
    public var id: Int64
    public var leaseToken: String
    public var signedPayload: String
    public var attempts: Int

    public init(id: Int64, leaseToken: String, signedPayload: String, attempts: Int) {
        self.id = id
        self.leaseToken = leaseToken
        self.signedPayload = signedPayload
        self.attempts = attempts
    }
}

extension JobStore {
    /// Claims up to `limit` notifications to verify and apply (`receipt_notification_claim`). One whose lease expired
    /// on its `maxAttempts`-th claim (its worker ended while processing it) is set aside as `dead` instead.
    public func claimNotifications(
        worker: String, limit: Int, leaseSeconds: Double, maxAttempts: Int = 20
    ) throws -> [ClaimedNotification] {
        let rows = try connection.query(
            "SELECT id, lease_token, signed_payload, attempts FROM receipt_notification_claim($1, $2, $3, $4)",
            [worker, String(limit), String(leaseSeconds), String(maxAttempts)]
        )
        return rows.rows.indices.compactMap { index in
            guard let id = rows.int64(index, "id"), let token = rows[index, "lease_token"],
                let payload = rows[index, "signed_payload"]
            else { return nil }
            return ClaimedNotification(
                id: id, leaseToken: token, signedPayload: payload, attempts: Int(rows.int64(index, "attempts") ?? 1)
            )
        }
    }

    /// Extends the leases of notifications still in hand (`receipt_notification_renew_leases`); returns how many were
    /// renewed (one written back meanwhile, or no longer ours, is not).
    public func renewNotificationLeases(
        worker: String, notifications: [ClaimedNotification], leaseSeconds: Double
    ) throws -> Int {
        guard !notifications.isEmpty else { return 0 }
        let rows = try connection.query(
            "SELECT receipt_notification_renew_leases($1, $2::bigint[], $3::uuid[], $4) AS renewed",
            [worker, PostgresArray.int64(notifications.map(\.id)), PostgresArray.text(notifications.map(\.leaseToken)),
             String(leaseSeconds)]
        )
        return Int(rows.int64(0, "renewed") ?? 0)
    }

    /// Writes back what became of a claimed notification, applying a verified one to the ledger
    /// (`receipt_notification_apply`); returns its new state (`lost` when the lease was no longer ours) and, for a
    /// rejected or dead one, the reason recorded.
    public func applyNotification(
        _ notification: ClaimedNotification, result: NotificationOutcome
    ) throws -> (state: String, reason: String?) {
        let rows = try connection.query(
            "SELECT receipt_notification_apply($1, $2::uuid, $3::jsonb) AS state",
            [String(notification.id), notification.leaseToken, try result.json()]
        )
        let state = rows[0, "state"] ?? "lost"
        // Why it was rejected or gave up, as recorded (some reasons are decided by the function, not the caller).
        guard state == "rejected" || state == "dead" else { return (state, nil) }
        let reason = try connection.query(
            "SELECT reason FROM receipt_notifications WHERE id = $1", [String(notification.id)]
        )
        return (state, reason.rows.first?.first ?? nil)
    }

    /// Writes back a batch of notifications in one round trip and one transaction (`receipt_notification_apply_batch`,
    /// which calls `receipt_notification_apply` for each, in the order given). Returns each one's new state and, for
    /// a rejected or dead one, the reason recorded, by id (`lost` when its lease was no longer ours).
    /// - Throws: when any item fails nothing of the batch is written (one transaction): write them one by one with
    ///   ``applyNotification(_:result:)``, so the failing one holds up no other.
    public func applyNotifications(
        _ batch: [(notification: ClaimedNotification, result: NotificationOutcome)]
    ) throws -> [Int64: (state: String, reason: String?)] {
        guard !batch.isEmpty else { return [:] }
        let results = try batch.map { item in try item.result.json() }
        let rows = try connection.query(
            "SELECT id, state, reason FROM receipt_notification_apply_batch($1::bigint[], $2::uuid[], $3::jsonb[])",
            [PostgresArray.int64(batch.map(\.notification.id)), PostgresArray.text(batch.map(\.notification.leaseToken)),
             PostgresArray.text(results)]
        )
        var written: [Int64: (state: String, reason: String?)] = [:]
        for index in rows.rows.indices {
            if let id = rows.int64(index, "id") { written[id] = (rows[index, "state"] ?? "lost", rows[index, "reason"]) }
        }
        return written
    }

    /// Writes back notifications the worker rejected before reading what they say (a signature or chain that does
    /// not hold), each under its own lease, in one set-based statement (`receipt_notification_reject`): a flood of
    /// forgeries costs a statement per batch, not per forgery. Returns the ids rejected; one missing had a lease no
    /// longer ours (`lost`).
    public func rejectNotifications(
        _ rejected: [(notification: ClaimedNotification, result: NotificationOutcome)]
    ) throws -> Set<Int64> {
        guard !rejected.isEmpty else { return [] }
        let rows = try connection.query(
            "SELECT r AS id FROM receipt_notification_reject($1::bigint[], $2::uuid[], $3::text[], $4::text[]) AS r",
            [PostgresArray.int64(rejected.map(\.notification.id)),
             PostgresArray.text(rejected.map(\.notification.leaseToken)),
             PostgresArray.text(rejected.map { ($0.result.reason ?? .invalidSignature).rawValue }),
             PostgresArray.text(rejected.map { $0.result.error ?? "" })]
        )
        return Set(rows.rows.indices.compactMap { rows.int64($0, "id") })
    }

    /// Records Apple's id of each app (appAppleId) that production notifications must carry.
    public func registerAppAppleIds(_ ids: [String: Int64]) throws {
        for (bundleId, appAppleId) in ids.sorted(by: { $0.key < $1.key }) {
            _ = try connection.query(
                """
                INSERT INTO receipt_apps (bundle_id, app_apple_id) VALUES ($1, $2)
                ON CONFLICT (bundle_id) DO UPDATE SET app_apple_id = EXCLUDED.app_apple_id
                WHERE receipt_apps.app_apple_id IS DISTINCT FROM EXCLUDED.app_apple_id
                """,
                [bundleId, String(appAppleId)]
            )
        }
    }
}

extension JobStore {
    /// Gives claimed notifications back (`receipt_notification_release`): claimable again at once, the attempt not
    /// counted. Returns how many were given back (one no longer held under its token is not).
    public func releaseNotifications(_ notifications: [ClaimedNotification]) throws -> Int {
        guard !notifications.isEmpty else { return 0 }
        let rows = try connection.query(
            "SELECT receipt_notification_release($1::bigint[], $2::uuid[]) AS released",
            [PostgresArray.int64(notifications.map(\.id)), PostgresArray.text(notifications.map(\.leaseToken))]
        )
        return Int(rows.int64(0, "released") ?? 0)
    }
}
