import PostgresClient

/// Where App Store Server Notifications are taken in: `receive_notification()` (sql/functions), one statement in
/// its own transaction, so a returned id is a committed row. Wraps one connection: used by one thread at a time.
public final class NotificationInbox {
    /// Who handed the notification over, as `receipt_notifications.source` records it.
    public enum Source: String, Sendable {
        /// `SELECT receive_notification($1)` from the API layer's own endpoint.
        case sql
        /// `receipt-worker notifications`, Apple posting to us.
        case receiver
        /// Get Notification History (`receipt-worker notifications-replay`).
        case history
    }

    /// A stored notification: its row, and whether the row was there before this call.
    public struct Stored: Sendable, Hashable {
        public var id: Int64
        public var alreadyKnown: Bool

        public init(id: Int64, alreadyKnown: Bool) {
            self.id = id
            self.alreadyKnown = alreadyKnown
        }
    }

    /// The SQLSTATE `receive_notification()` refuses a payload with (empty, over 1 MiB, not a compact JWS).
    public static let refusedPayloadState = "22023"

    public let connection: PostgresConnection

    public init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Stores `signedPayload` (identical bytes are one row) and returns its row's id, committed. Needs EXECUTE on
    /// `receive_notification()` only (the `receipt_api` role has it).
    /// - Throws: `PostgresError`; SQLSTATE ``refusedPayloadState`` for a payload that cannot be a JWS.
    public func receive(_ signedPayload: String, source: Source) throws -> Int64 {
        let result = try connection.query("SELECT receive_notification($1, $2) AS id", [signedPayload, source.rawValue])
        guard let id = result.int64(0, "id") else {
            throw PostgresError(kind: .protocolError, message: "receive_notification() returned no id")
        }
        return id
    }

    /// Like ``receive(_:source:)``, and tells whether the row was there before: read with the statement's snapshot,
    /// taken before `receive_notification()` inserts, so `alreadyKnown` means committed before this call (Apple's
    /// delivery, an earlier replay). Also needs SELECT on `receipt_notifications` (the `receipt_worker` role).
    public func receiveReportingKnown(_ signedPayload: String, source: Source) throws -> Stored {
        let result = try connection.query(
            """
            WITH stored AS (SELECT receive_notification($1, $2) AS id)
            SELECT stored.id, EXISTS (SELECT 1 FROM receipt_notifications n WHERE n.id = stored.id) AS known
            FROM stored
            """,
            [signedPayload, source.rawValue]
        )
        guard let id = result.int64(0, "id") else {
            throw PostgresError(kind: .protocolError, message: "receive_notification() returned no id")
        }
        return Stored(id: id, alreadyKnown: result[0, "known"] == "t")
    }
}

extension PostgresError {
    /// `receive_notification()` refused the payload's shape: asking again will not help.
    public var isRefusedNotificationPayload: Bool {
        kind == .queryFailed && sqlState == NotificationInbox.refusedPayloadState
    }
}
