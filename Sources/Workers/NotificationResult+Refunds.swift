import AppStoreSignedData
import ReceiptQueue

extension NotificationResult {
    /// `outcome` with what refunds and revenue read (issue 24): a CONSUMPTION_REQUEST's reason, a REFUND's type and
    /// share, and the transaction's price and its circumstances.
    static func refundFacts(of notification: SignedNotification, in outcome: NotificationOutcome)
        -> NotificationOutcome
    {
        var outcome = outcome
        outcome.notification?.consumptionRequestReason = notification.consumptionRequestReason
        if let transaction = notification.transaction {
            outcome.transaction?.revocationType = transaction.revocationType
            outcome.transaction?.revocationPercentage = transaction.revocationPercentage
            outcome.transaction?.priceMilliunits = transaction.price
            outcome.transaction?.currency = transaction.currency
            outcome.transaction?.storefront = transaction.storefront
            outcome.transaction?.offerType = transaction.offerType
            outcome.transaction?.offerDiscountType = transaction.offerDiscountType
            outcome.transaction?.transactionReason = transaction.transactionReason
        }
        return outcome
    }
}
