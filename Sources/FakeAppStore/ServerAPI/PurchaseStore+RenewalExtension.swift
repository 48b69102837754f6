import AppStoreModel
import Foundation

/// Apple's renewal-date extensions, as the fake does them: Extend a Subscription Renewal Date moves the latest
/// period's expiry of one chain and records RENEWAL_EXTENDED; Extend Subscription Renewal Dates for All Active
/// Subscribers does that for every active chain of a product (in the storefronts asked), at once, then records the
/// RENEWAL_EXTENSION SUMMARY with the counts; its status is complete from then on. A request id seen before changes
/// nothing again (Apple's rule).
struct RenewalExtensionRecord: Sendable {
    var environment: String
    var bundleId: String
    var productId: String?
    var response: RenewalExtension.Response?
    var status: RenewalExtension.MassStatus?
}

extension PurchaseStore {
    /// What Extend a Subscription Renewal Date found.
    enum RenewalExtensionChange {
        case extended(RenewalExtension.Response)
        /// No purchase of the app in that environment has that id (4040010).
        case notFound
        /// The id is a renewal's, not the chain's original one (4000187 for Apple's token call; 4000008 here).
        case notOriginal
        /// Not an active auto-renewable subscription: Apple answers success false.
        case notEligible(RenewalExtension.Response)
    }

    /// Extend a Subscription Renewal Date of the chain `originalTransactionId` by `days`.
    func extendRenewalDate(
        originalTransactionId: String, _ request: RenewalExtension.Request, environment: String, bundleId: String,
        now: Date = Date()
    ) throws(FakeAppStoreError) -> RenewalExtensionChange {
        let milliseconds = Self.milliseconds(now)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> RenewalExtensionChange in
            guard let index = contents.indexByTransaction[originalTransactionId],
                contents.purchases[index].purchase.environment == environment,
                contents.purchases[index].purchase.bundleId == bundleId
            else { return .notFound }
            guard contents.purchases[index].originalTransactionId == originalTransactionId else { return .notOriginal }
            if let earlier = contents.renewalExtensions[request.requestIdentifier]?.response {
                return .extended(earlier)
            }
            var draft = contents
            let response = try Self.extend(
                originalTransactionId, days: request.extendByDays, in: &draft, store: self, now: milliseconds
            )
            draft.renewalExtensions[request.requestIdentifier] = RenewalExtensionRecord(
                environment: environment, bundleId: bundleId, productId: nil, response: response, status: nil
            )
            contents = draft
            return response.success == true ? .extended(response) : .notEligible(response)
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of `request.productId`, done at once.
    func massExtendRenewalDate(
        _ request: RenewalExtension.MassRequest, environment: String, bundleId: String, now: Date = Date()
    ) throws(FakeAppStoreError) -> RenewalExtension.MassResponse {
        let milliseconds = Self.milliseconds(now)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> RenewalExtension.MassResponse in
            if contents.renewalExtensions[request.requestIdentifier] != nil {
                return RenewalExtension.MassResponse(requestIdentifier: request.requestIdentifier)
            }
            var draft = contents
            let chains = Set(
                contents.purchases.filter {
                    $0.purchase.environment == environment && $0.purchase.bundleId == bundleId
                        && $0.purchase.type == Self.autoRenewable
                }.map(\.originalTransactionId)
            ).sorted()
            var succeeded: Int64 = 0
            var failed: Int64 = 0
            for chain in chains {
                guard let latest = Self.latestPeriod(of: chain, in: contents),
                    latest.purchase.productId == request.productId,
                    request.storefrontCountryCodes.map({ $0.contains(latest.purchase.storefront) }) ?? true
                else { continue }
                let response = try Self.extend(chain, days: request.extendByDays, in: &draft, store: self, now: milliseconds)
                if response.success == true { succeeded += 1 } else { failed += 1 }
            }
            let status = RenewalExtension.MassStatus(
                requestIdentifier: request.requestIdentifier, complete: true, completeDate: milliseconds,
                succeededCount: succeeded, failedCount: failed
            )
            draft.renewalExtensions[request.requestIdentifier] = RenewalExtensionRecord(
                environment: environment, bundleId: bundleId, productId: request.productId, response: nil,
                status: status
            )
            let uuid = UUID().uuidString.lowercased()
            let summary = FakePayloads.Notification.Summary(
                environment: environment,
                appAppleId: FakePayloads.appAppleId(bundleId: bundleId, environment: environment),
                bundleId: bundleId, productId: request.productId, requestIdentifier: request.requestIdentifier,
                storefrontCountryCodes: request.storefrontCountryCodes, succeededCount: succeeded, failedCount: failed
            )
            let payload = FakePayloads.Notification(
                notificationType: "RENEWAL_EXTENSION", subtype: "SUMMARY", notificationUUID: uuid, data: nil,
                summary: summary, signedDate: milliseconds
            )
            draft.notifications.append(
                Notification(
                    notificationUUID: uuid, environment: environment, bundleId: bundleId, customerId: "",
                    transactionId: "", notificationType: "RENEWAL_EXTENSION", subtype: "SUMMARY",
                    signedDate: milliseconds, delivered: true, signedPayload: try sign(payload)
                )
            )
            contents = draft
            return RenewalExtension.MassResponse(requestIdentifier: request.requestIdentifier)
        }
    }

    /// Get Status of Subscription Renewal Date Extensions: nil when no such request of `productId` was made.
    func massExtensionStatus(
        productId: String, requestIdentifier: String, environment: String, bundleId: String
    ) -> RenewalExtension.MassStatus? {
        contents.withLock { contents in
            guard let record = contents.renewalExtensions[requestIdentifier], record.productId == productId,
                record.environment == environment, record.bundleId == bundleId
            else { return nil }
            return record.status
        }
    }

    /// Moves the expiry of the chain's latest period by `days` when it is active (not expired, revoked or in billing
    /// retry), re-signs it and records RENEWAL_EXTENDED; else success false.
    private static func extend(
        _ originalTransactionId: String, days: Int, in contents: inout Contents, store: PurchaseStore, now: Int64
    ) throws(FakeAppStoreError) -> RenewalExtension.Response {
        guard var latest = latestPeriod(of: originalTransactionId, in: contents), latest.purchase.type == autoRenewable,
            let expires = latest.purchase.expiresDate, expires > now, latest.purchase.revocationDate == nil,
            contents.renewals[originalTransactionId]?.billingRetry != true,
            contents.renewals[originalTransactionId]?.expirationIntent == nil
        else {
            return RenewalExtension.Response(
                originalTransactionId: originalTransactionId, webOrderLineItemId: nil, success: false,
                effectiveDate: nil
            )
        }
        latest.purchase.expiresDate = expires + Int64(days) * 86_400_000
        let extended = try store.resign(latest, in: &contents, signedDate: now)
        contents.notifications.append(
            try store.notification(
                type: "RENEWAL_EXTENDED", subtype: nil, about: extended, in: contents, signedDate: now, delivered: true
            )
        )
        return RenewalExtension.Response(
            originalTransactionId: originalTransactionId, webOrderLineItemId: extended.purchase.webOrderLineItemId,
            success: true, effectiveDate: extended.purchase.expiresDate
        )
    }
}
