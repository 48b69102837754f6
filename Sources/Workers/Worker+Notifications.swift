import AppStoreSignedData
import Foundation
import Logging
import ReceiptQueue

extension Worker {
    /// How many notifications one claim takes.
    static let notificationBatch = 50

    /// Verifies and applies the notifications that are due (receipt_notifications), a batch at a time, for at most
    /// about a second, so that the maintenance loop's other duties (lease renewal) are not held up. Each is written
    /// back under its own lease: a worker that dies leaves them to be claimed again when the lease expires.
    func applyNotifications(_ session: DatabaseSession) {
        guard let verifier = signedData else { return }
        let deadline = Self.now() + 1
        while !state.isStopping && Self.now() < deadline {
            let claimed = session.perform(giveUp: { true }) { store in
                try store.claimNotifications(
                    worker: configuration.workerId, limit: Self.notificationBatch,
                    leaseSeconds: configuration.leaseSeconds
                )
            }
            guard case .success(let batch) = claimed, !batch.isEmpty else { return }
            for notification in batch {
                let result = NotificationResult.result(
                    verifying: notification, with: { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) },
                    sandboxPolicy: configuration.rules.sandboxPolicy, retry: configuration.retry,
                    random: Double.random(in: 0..<1)
                )
                let written = session.perform(giveUp: { true }) { store in
                    try store.applyNotification(notification, result: result)
                }
                log(notification, result: result, written: written)
            }
            if batch.count < Self.notificationBatch { return }
        }
    }

    private func log(_ notification: ClaimedNotification, result: [String: Any], written: Result<String, any Error>?) {
        let note = result["notification"] as? [String: Any]
        var metadata: Logger.Metadata = ["notification": "\(notification.id)"]
        if let type = note?["type"] as? String { metadata["type"] = "\(type)" }
        if let uuid = note?["uuid"] as? String { metadata["uuid"] = "\(uuid)" }
        switch written {
        case .success(let state):
            metadata["state"] = "\(state)"
            if let reason = result["reason"] as? String { metadata["reason"] = "\(reason)" }
            if let error = result["error"] as? String { metadata["error"] = "\(error)" }
            if state == "rejected" || state == "dead" {
                logger.warning("notification not applied", metadata: metadata)
            } else {
                logger.info("notification written", metadata: metadata)
            }
        case .failure(let error):
            metadata["error"] = "\(error)"
            logger.error("notification write-back failed; it is claimed again when its lease expires", metadata: metadata)
        case nil:
            break
        }
    }
}
