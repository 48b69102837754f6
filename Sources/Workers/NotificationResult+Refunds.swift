import AppStoreSignedData
import ReceiptQueue

extension NotificationResult {
    /// `outcome` with what refunds read (issue 24): a CONSUMPTION_REQUEST's reason, a REFUND's type and share (the
    /// transaction's price and its circumstances are `transaction(_:)`'s, for refreshes too).
    static func refundFacts(of notification: SignedNotification, in outcome: NotificationOutcome)
        -> NotificationOutcome
    {
        var outcome = outcome
        outcome.notification?.consumptionRequestReason = notification.consumptionRequestReason
        if let transaction = notification.transaction {
            outcome.transaction?.revocationType = transaction.revocationType
            outcome.transaction?.revocationPercentage = transaction.revocationPercentage
        }
        return outcome
    }
}
