import AppStoreSignedData
import Foundation
import ReceiptQueue
import ReceiptRules

/// What a worker writes back for one App Store Server Notification: a `NotificationOutcome` (verified with what it
/// says, rejected, or a retry when the revocation check could not be made). Pure: the verification is passed in.
public enum NotificationResult {
    public static func result(
        verifying notification: ClaimedNotification, with verify: (String) throws(SignedDataError) -> SignedNotification,
        sandboxPolicy: SandboxPolicy, retry: RetryPolicy, random: Double
    ) -> NotificationOutcome {
        let verified: SignedNotification
        do {
            verified = try verify(notification.signedPayload)
        } catch let error where error.isRetryable {
            return NotificationOutcome(
                kind: .retry, error: error.message,
                retryInSeconds: retry.delay(afterAttempt: notification.attempts, random: random),
                maxAttempts: retry.maxAttempts
            )
        } catch {
            return NotificationOutcome(kind: .rejected, reason: .invalidSignature, error: error.message)
        }
        var result = outcome(of: verified)
        if result.transaction != nil, case .allowlist(let users) = sandboxPolicy {
            result.creditRules = NotificationOutcome.CreditRules(sandboxUsers: users.sorted())
        }
        // A shape this version does not know names no environment: kept as unknown, not refused as a sandbox one.
        if verified.shape != .unknown, verified.environment != "Production", case .reject = sandboxPolicy {
            result.kind = .rejected
            result.reason = .sandboxNotAllowed
            result.error = "a \(verified.environment ?? "Sandbox") notification, and SANDBOX_POLICY is reject"
        }
        return result
    }

    /// A verified notification's facts, as `receipt_notification_apply()` reads them.
    static func outcome(of notification: SignedNotification) -> NotificationOutcome {
        var outcome = NotificationOutcome(
            kind: .verified,
            notification: NotificationOutcome.Facts(
                uuid: notification.notificationUUID, type: notification.notificationType,
                subtype: notification.subtype, environment: notification.environment,
                bundleId: notification.bundleId, appAppleId: notification.appAppleId,
                signedDateMs: notification.signedDateMs, status: notification.status,
                appTransactionId: notification.appTransactionId
            ),
            transaction: notification.transaction.map(transaction),
            renewal: notification.renewalInfo.map(renewal)
        )
        outcome.notification?.shape = notification.shape.rawValue
        outcome.notification?.summary = notification.summary.map { summary in
            NotificationOutcome.Summary(
                requestIdentifier: summary.requestIdentifier, productId: summary.productId,
                storefrontCountryCodes: summary.storefrontCountryCodes, succeededCount: summary.succeededCount,
                failedCount: summary.failedCount
            )
        }
        outcome.notification?.externalPurchaseId = notification.externalPurchaseToken?.externalPurchaseId
        outcome.notification?.tokenCreationDateMs = notification.externalPurchaseToken?.tokenCreationDateMs
        return refundFacts(of: notification, in: outcome)
    }

    static func transaction(_ transaction: SignedTransaction) -> NotificationOutcome.Transaction {
        var outcome = NotificationOutcome.Transaction(
            transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
            webOrderLineItemId: transaction.webOrderLineItemId, productId: transaction.productId,
            quantity: transaction.quantity, purchaseDateMs: transaction.purchaseDateMs,
            expiresDateMs: transaction.expiresDateMs, revocationDateMs: transaction.revocationDateMs,
            revocationReason: transaction.revocationReason, inAppOwnershipType: transaction.inAppOwnershipType
        )
        // What Apple charged and how (issue 24), also for a refresh's renewal credited to the ledger.
        outcome.priceMilliunits = transaction.price
        outcome.currency = transaction.currency
        outcome.storefront = transaction.storefront
        outcome.offerType = transaction.offerType
        outcome.offerDiscountType = transaction.offerDiscountType
        outcome.transactionReason = transaction.transactionReason
        // Issue 23: the plan, its commitment, the offer's id and duration, the app transaction, the signing time.
        outcome.billingPlanType = transaction.billingPlanType
        outcome.commitmentPeriod = transaction.commitmentInfo?.billingPeriodNumber
        outcome.commitmentPeriods = transaction.commitmentInfo?.totalBillingPeriods
        outcome.commitmentExpiresDateMs = transaction.commitmentInfo?.commitmentExpiresDateMs
        outcome.commitmentPriceMilliunits = transaction.commitmentInfo?.commitmentPrice
        outcome.offerIdentifier = transaction.offerIdentifier
        outcome.offerPeriod = transaction.offerPeriod
        outcome.appTransactionId = transaction.appTransactionId
        outcome.signedDateMs = transaction.signedDateMs
        outcome.appAccountToken = transaction.appAccountToken  // issue 37: whose purchase it is
        outcome.storefrontId = transaction.storefrontId
        return outcome
    }

    static func renewal(_ renewal: SignedRenewalInfo) -> NotificationOutcome.Renewal {
        var outcome = NotificationOutcome.Renewal(
            originalTransactionId: renewal.originalTransactionId, productId: renewal.productId,
            autoRenewStatus: renewal.autoRenewStatus, autoRenewProductId: renewal.autoRenewProductId,
            expirationIntent: renewal.expirationIntent, isInBillingRetryPeriod: renewal.isInBillingRetryPeriod,
            gracePeriodExpiresDateMs: renewal.gracePeriodExpiresDateMs,
            priceIncreaseStatus: renewal.priceIncreaseStatus, renewalPrice: renewal.renewalPrice,
            currency: renewal.currency, renewalDateMs: renewal.renewalDateMs, offerType: renewal.offerType,
            offerIdentifier: renewal.offerIdentifier, signedDateMs: renewal.signedDateMs
        )
        outcome.offerPeriod = renewal.offerPeriod
        outcome.offerDiscountType = renewal.offerDiscountType
        outcome.appTransactionId = renewal.appTransactionId
        outcome.renewalBillingPlanType = renewal.renewalBillingPlanType
        outcome.commitmentAutoRenewStatus = renewal.commitmentInfo?.autoRenewStatus
        outcome.commitmentAutoRenewProductId = renewal.commitmentInfo?.autoRenewProductId
        outcome.commitmentRenewalBillingPlanType = renewal.commitmentInfo?.renewalBillingPlanType
        outcome.commitmentRenewalDateMs = renewal.commitmentInfo?.renewalDateMs
        outcome.commitmentRenewalPrice = renewal.commitmentInfo?.renewalPrice
        outcome.appAccountToken = renewal.appAccountToken
        outcome.eligibleWinBackOfferIds = renewal.eligibleWinBackOfferIds
        return outcome
    }
}
