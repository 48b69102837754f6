import AppStoreSignedData

/// Notifications as sent: looked up for a duplicate, forged, and their send attempts recorded.
extension PurchaseStore {
    /// The genuine notification with this notificationUUID.
    public func notification(uuid: String) -> Notification? {
        let wanted = uuid.lowercased()
        return contents.withLock { contents in
            contents.notifications.first { $0.notificationUUID == wanted && !$0.forged }
        }
    }

    /// `notification`'s very JSON (its notificationUUID, the signed transaction and renewal info inside) signed by
    /// `chain` instead of the fake's own chain; by default a chain of Apple's shape under a root nobody trusts. Not
    /// recorded: it is kept only once sent, and never appears in Get Notification History.
    public func forged(
        _ notification: Notification, by chain: SigningChain? = nil
    ) throws(FakeAppStoreError) -> Notification {
        let parts = notification.signedPayload.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else {
            throw FakeAppStoreError(.signing, "notification \(notification.notificationUUID) is not a compact JWS")
        }
        var copy = notification
        copy.forged = true
        copy.delivered = false
        copy.sendAttempts = []
        do {
            let signer = try chain.map { try JWSSigner(chain: $0) } ?? forgingSigner()
            copy.signedPayload = try signer.sign(payload)
        } catch {
            throw FakeAppStoreError(.signing, "cannot forge a notification: \(error)")
        }
        return copy
    }

    /// Records an attempt to send `notification` (the stored one with the same signed payload, or `notification`
    /// itself, added, when none is stored: a forged one) and returns it as recorded: delivered once an attempt
    /// succeeded.
    @discardableResult
    func recordAttempt(_ attempt: Notification.SendAttempt, of notification: Notification) -> Notification {
        contents.withLock { contents in
            let stored = contents.notifications.firstIndex { $0.signedPayload == notification.signedPayload }
            if stored == nil { contents.notifications.append(notification) }
            let index = stored ?? contents.notifications.count - 1
            contents.notifications[index].sendAttempts.append(attempt)
            contents.notifications[index].delivered = contents.notifications[index].sendAttempts.contains {
                $0.succeeded
            }
            return contents.notifications[index]
        }
    }

    private func forgingSigner() throws -> JWSSigner {
        try forger.withLock { forger in
            if let forger { return forger }
            var options = SigningChain.Options()
            options.name = "untrusted App Store look-alike"
            let signer = try JWSSigner(chain: try SigningChain(options))
            forger = signer
            return signer
        }
    }
}
