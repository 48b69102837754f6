import ThreadSupport

/// App Store Server Notifications V2 from the fake: purchase events (`purchases.refund`, `renew`, `expire`, …)
/// record a notification; `deliver` sends it to the app's server as Apple does.
///
/// ```swift
/// let refund = try server.purchases.refund(transactionId: added[0].transactionId)
/// let sent = try server.deliver(refund, to: "http://127.0.0.1:8080/notifications")
/// // sent.delivered: the server answered 200…206; Get Notification History now reports the attempt.
/// try server.deliver(refund)                           // a duplicate: the same signedPayload again
/// try server.deliver(try server.purchases.forged(refund))  // the same JSON, signed by an untrusted chain
/// ```
extension FakeAppStoreServer {
    /// Where notifications go when `deliver` names no URL (`FakeAppStoreConfiguration.notificationURL`).
    public var notificationURL: String? { state.serverAPI.notificationURL }

    /// Sends `notification` to `url` (by default `notificationURL`) as Apple does, `POST {"signedPayload": …}`, and
    /// blocks until the attempt ends. Returns the notification as recorded with this attempt: `delivered` when the
    /// app's server answered 200…206. Sending one again is a duplicate delivery; a forged one is recorded once sent
    /// (never in Get Notification History). Call it from outside the server's event loops.
    @discardableResult
    public func deliver(
        _ notification: PurchaseStore.Notification, to url: String? = nil
    ) throws(FakeAppStoreError) -> PurchaseStore.Notification {
        guard let target = url ?? notificationURL else {
            throw FakeAppStoreError(.invalidConfiguration, "no URL to send notifications to (notificationURL)")
        }
        guard Self.isHTTPURL(target) else {
            throw FakeAppStoreError(
                .invalidConfiguration, "the notification URL must be http:// or https://, not \(target)"
            )
        }
        let recorded = ConditionLock<PurchaseStore.Notification?>(nil)
        state.serverAPI.deliver(notification, to: target) { sent in recorded.withLock { $0 = sent } }
        return recorded.wait { $0 }
    }

    static func isHTTPURL(_ url: String) -> Bool {
        url.hasPrefix("http://") || url.hasPrefix("https://")
    }
}
