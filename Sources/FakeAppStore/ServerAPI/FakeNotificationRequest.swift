import Foundation

/// The body of `POST /fake/notifications` (see `FakeAdminResponder`): which notification to make, and whether and
/// where to send it.
struct FakeNotificationRequest: Decodable {
    /// refund, reverse_refund, renew, expire.
    var event: String?
    var notificationType: String?
    var subtype: String?
    var transactionId: String?
    var originalTransactionId: String?
    var revocationReason: Int?
    var consumptionRequestReason: String?
    /// Milliseconds since 1970.
    var signedDate: Int64?
    /// The notificationUUID of a notification to send again.
    var duplicateOf: String?
    var forged: Bool?
    var deliver: Bool?
    var url: String?
    var delivered: Bool?

    /// The answer: the notification as made or as recorded after the attempt to send it.
    struct Answer: Encodable {
        var signedPayload: String
        var notificationUUID: String
        var notificationType: String
        var subtype: String?
        var delivered: Bool
        var sendAttemptResult: String?

        init(_ notification: PurchaseStore.Notification) {
            signedPayload = notification.signedPayload
            notificationUUID = notification.notificationUUID
            notificationType = notification.notificationType
            subtype = notification.subtype
            delivered = notification.delivered
            sendAttemptResult = notification.sendAttempts.last?.result
        }
    }

    /// Makes (and, for an event or a type, records) the notification asked for; forged when asked.
    func make(in store: PurchaseStore) throws(FakeAppStoreError) -> PurchaseStore.Notification {
        let chosen = [event != nil, notificationType != nil, duplicateOf != nil].filter { $0 }.count
        guard chosen == 1 else {
            throw Self.invalid("give exactly one of event, notificationType and duplicateOf")
        }
        let date = signedDate.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? Date()
        let delivered = delivered ?? true
        let made: PurchaseStore.Notification
        if let uuid = duplicateOf {
            guard let earlier = store.notification(uuid: uuid) else { throw Self.invalid("no notification \(uuid)") }
            made = earlier
        } else if let type = notificationType {
            let transactionId = try required(transactionId, "transactionId")
            made = forged == true
                ? try store.unrecordedNotification(
                    type: type, subtype: subtype, transactionId: transactionId,
                    consumptionRequestReason: consumptionRequestReason, signedDate: date
                )
                : try store.notify(
                    type: type, subtype: subtype, transactionId: transactionId,
                    consumptionRequestReason: consumptionRequestReason, signedDate: date, delivered: delivered
                )
        } else {
            guard forged != true else {
                throw Self.invalid("a forged notification changes no purchase: give notificationType or duplicateOf")
            }
            made = try happen(event ?? "", date: date, delivered: delivered, in: store)
        }
        return forged == true ? try store.forged(made) : made
    }

    private func happen(
        _ event: String, date: Date, delivered: Bool, in store: PurchaseStore
    ) throws(FakeAppStoreError) -> PurchaseStore.Notification {
        switch event {
        case "refund":
            return try store.refund(
                transactionId: required(transactionId, "transactionId"), reason: revocationReason ?? 0,
                signedDate: date, delivered: delivered
            )
        case "reverse_refund":
            return try store.reverseRefund(
                transactionId: required(transactionId, "transactionId"), signedDate: date, delivered: delivered
            )
        case "renew":
            return try store.renew(
                originalTransactionId: required(originalTransactionId ?? transactionId, "originalTransactionId"),
                signedDate: date, delivered: delivered
            )
        case "expire":
            return try store.expire(
                originalTransactionId: required(originalTransactionId ?? transactionId, "originalTransactionId"),
                subtype: subtype ?? "VOLUNTARY", signedDate: date, delivered: delivered
            )
        default:
            throw Self.invalid("event must be refund, reverse_refund, renew or expire, not \(event)")
        }
    }

    private func required(_ value: String?, _ name: String) throws(FakeAppStoreError) -> String {
        guard let value, !value.isEmpty else { throw Self.invalid("\(name) is required") }
        return value
    }

    private static func invalid(_ message: String) -> FakeAppStoreError {
        FakeAppStoreError(.invalidNotification, message)
    }
}
