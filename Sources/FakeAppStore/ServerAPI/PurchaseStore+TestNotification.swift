import Foundation

/// Request a Test Notification: Apple's TEST notification, about no purchase.
extension PurchaseStore {
    /// Makes and records the TEST notification for `bundleId` in `environment` (data: appAppleId, bundleId,
    /// bundleVersion, environment; no transaction), not yet sent.
    func testNotification(bundleId: String, environment: String, signedDate: Int64) throws(FakeAppStoreError)
        -> Notification
    {
        let uuid = UUID().uuidString.lowercased()
        let payload = FakePayloads.Notification(
            notificationType: "TEST", subtype: nil, notificationUUID: uuid,
            data: FakePayloads.Notification.Data(
                appAppleId: FakePayloads.appAppleId(bundleId: bundleId, environment: environment), bundleId: bundleId,
                environment: environment
            ),
            signedDate: signedDate
        )
        let notification = Notification(
            notificationUUID: uuid, environment: environment, bundleId: bundleId, customerId: "", transactionId: "",
            notificationType: "TEST", subtype: nil, signedDate: signedDate, delivered: false,
            signedPayload: try sign(payload)
        )
        contents.withLock { $0.notifications.append(notification) }
        return notification
    }
}
