import AppStoreSignedData
import Foundation
import ReceiptQueue
import ReceiptRules

/// What a worker writes back for one App Store Server Notification (`receipt_notification_apply`'s `p_result`):
/// verified with what it says, rejected (a signature or chain that does not hold, sandbox refused), or a retry (the
/// revocation check could not be made). Pure: the verification is passed in.
public enum NotificationResult {
    public static func result(
        verifying notification: ClaimedNotification, with verify: (String) throws(SignedDataError) -> SignedNotification,
        sandboxPolicy: SandboxPolicy, retry: RetryPolicy, random: Double
    ) -> [String: Any] {
        let verified: SignedNotification
        do {
            verified = try verify(notification.signedPayload)
        } catch let error where error.isRetryable {
            return [
                "outcome": "retry", "error": error.message, "max_attempts": retry.maxAttempts,
                "retry_in_seconds": retry.delay(afterAttempt: notification.attempts, random: random),
            ]
        } catch {
            return ["outcome": "rejected", "reason": "invalid_signature", "error": error.message]
        }
        var result = fields(of: verified)
        if verified.environment != "Production", case .reject = sandboxPolicy {
            result["outcome"] = "rejected"
            result["reason"] = "sandbox_not_allowed"
            result["error"] = "a \(verified.environment ?? "Sandbox") notification, and SANDBOX_POLICY is reject"
        } else {
            result["outcome"] = "verified"
        }
        return result
    }

    /// The notification's facts, under the names receipt_notification_apply() reads.
    static func fields(of notification: SignedNotification) -> [String: Any] {
        var note: [String: Any] = [
            "uuid": notification.notificationUUID, "type": notification.notificationType,
            "signed_date_ms": notification.signedDateMs,
        ]
        note["subtype"] = notification.subtype
        note["environment"] = notification.environment
        note["bundle_id"] = notification.bundleId
        note["app_apple_id"] = notification.appAppleId
        var result: [String: Any] = ["notification": note]
        if let transaction = notification.transaction {
            var fields: [String: Any] = [:]
            fields["transaction_id"] = transaction.transactionId
            fields["original_transaction_id"] = transaction.originalTransactionId
            fields["web_order_line_item_id"] = transaction.webOrderLineItemId
            fields["product_id"] = transaction.productId
            fields["quantity"] = transaction.quantity
            fields["purchase_date_ms"] = transaction.purchaseDateMs
            fields["expires_date_ms"] = transaction.expiresDateMs
            fields["revocation_date_ms"] = transaction.revocationDateMs
            fields["revocation_reason"] = transaction.revocationReason
            fields["in_app_ownership_type"] = transaction.inAppOwnershipType
            result["transaction"] = fields
        }
        if let renewal = notification.renewalInfo {
            var fields: [String: Any] = [:]
            fields["expiration_intent"] = renewal.expirationIntent
            fields["auto_renew_status"] = renewal.autoRenewStatus
            result["renewal"] = fields
        }
        return result
    }
}
