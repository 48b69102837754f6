import Foundation
import JSONText

/// Encoding without Foundation's `JSONEncoder` for the fake App Store's every answer: the document the `Encodable`
/// conformances make (Apple's shapes: numbers as strings inside the receipt), keys from the same `CodingKeys`.
/// Debug builds compare the two.
extension VerifyReceiptResponse {
    public func jsonBytes() -> [UInt8] {
        var writer = JSONTextWriter()
        writer.open()
        writer.key(CodingKeys.status)
        writer.raw(String(status))
        writer.member(CodingKeys.environment, environment)
        if let isRetryable {
            writer.key(CodingKeys.isRetryable)
            writer.raw(isRetryable ? "true" : "false")
        }
        if let receipt {
            writer.key(CodingKeys.receipt)
            receipt.write(to: &writer)
        }
        if let latestReceiptInfo {
            writer.key(CodingKeys.latestReceiptInfo)
            writer.array(latestReceiptInfo) { writer, transaction in transaction.write(to: &writer) }
        }
        if let pendingRenewalInfo {
            writer.key(CodingKeys.pendingRenewalInfo)
            writer.array(pendingRenewalInfo) { writer, renewal in renewal.write(to: &writer) }
        }
        writer.member(CodingKeys.latestReceipt, latestReceipt)
        writer.close()
        #if DEBUG
        if let reference = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(self)) as? NSDictionary {
            let written = try? JSONSerialization.jsonObject(with: Data(writer.bytes)) as? NSDictionary
            assert(reference == written, "jsonBytes() differs from JSONEncoder")
        }
        #endif
        return writer.bytes
    }
}

extension ReceiptInfo {
    fileprivate func write(to writer: inout JSONTextWriter) {
        writer.open()
        writer.member(CodingKeys.bundleId, bundleId)
        writer.member(CodingKeys.applicationVersion, applicationVersion)
        writer.member(CodingKeys.originalApplicationVersion, originalApplicationVersion)
        writer.member(CodingKeys.receiptType, receiptType)
        writer.member(CodingKeys.receiptCreationDateMs, receiptCreationDateMs.map(String.init))
        writer.member(CodingKeys.requestDateMs, requestDateMs.map(String.init))
        if let inApp {
            writer.key(CodingKeys.inApp)
            writer.array(inApp) { writer, transaction in transaction.write(to: &writer) }
        }
        writer.close()
    }
}

extension InAppTransaction {
    fileprivate func write(to writer: inout JSONTextWriter) {
        writer.open()
        writer.member(CodingKeys.quantity, quantity.map(String.init))
        writer.member(CodingKeys.productId, productId)
        writer.member(CodingKeys.transactionId, transactionId)
        writer.member(CodingKeys.originalTransactionId, originalTransactionId)
        writer.member(CodingKeys.webOrderLineItemId, webOrderLineItemId)
        writer.member(CodingKeys.purchaseDateMs, purchaseDateMs.map(String.init))
        writer.member(CodingKeys.originalPurchaseDateMs, originalPurchaseDateMs.map(String.init))
        writer.member(CodingKeys.expiresDateMs, expiresDateMs.map(String.init))
        writer.member(CodingKeys.cancellationDateMs, cancellationDateMs.map(String.init))
        writer.member(CodingKeys.cancellationReason, cancellationReason)
        writer.member(CodingKeys.isTrialPeriod, isTrialPeriod.map(String.init))
        writer.member(CodingKeys.isInIntroOfferPeriod, isInIntroOfferPeriod.map(String.init))
        writer.member(CodingKeys.inAppOwnershipType, inAppOwnershipType)
        writer.close()
    }
}

extension PendingRenewalInfo {
    fileprivate func write(to writer: inout JSONTextWriter) {
        writer.open()
        writer.member(CodingKeys.productId, productId)
        writer.member(CodingKeys.autoRenewProductId, autoRenewProductId)
        writer.member(CodingKeys.originalTransactionId, originalTransactionId)
        writer.member(CodingKeys.autoRenewStatus, autoRenewStatus)
        writer.close()
    }
}
