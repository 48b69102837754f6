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

    /// Writes back what became of a claimed notification, applying a verified one to the ledger
    /// (`receipt_notification_apply`); returns its new state (`lost` when the lease was no longer ours) and, for a
    /// rejected or dead one, the reason recorded.
    public func applyNotification(
        _ notification: ClaimedNotification, result: [String: Any]
    ) throws -> (state: String, reason: String?) {
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        let rows = try connection.query(
            "SELECT receipt_notification_apply($1, $2::uuid, $3::jsonb) AS state",
            [String(notification.id), notification.leaseToken, String(decoding: json, as: UTF8.self)]
        )
        let state = rows[0, "state"] ?? "lost"
        // Why it was rejected or gave up, as recorded (some reasons are decided by the function, not the caller).
        guard state == "rejected" || state == "dead" else { return (state, nil) }
        let reason = try connection.query(
            "SELECT reason FROM receipt_notifications WHERE id = $1", [String(notification.id)]
        )
        return (state, reason.rows.first?.first ?? nil)
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
