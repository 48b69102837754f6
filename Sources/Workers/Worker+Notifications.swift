import AppStoreSignedData
import Foundation
import Logging
import ReceiptQueue

extension Worker {
    /// How many notifications one claim takes.
    static let notificationBatch = 50

    /// The notifications loop: every scheduler interval, verifies and applies the notifications that are due, until
    /// the worker stops. On a thread of its own: verifying one can take as long as Apple's OCSP responders (up to
    /// their timeout, twice per chain), which must not hold up the maintenance loop's lease renewals. It shares the
    /// maintenance loop's connection (`session`), which it holds only for each statement.
    func notificationLoop(_ session: DatabaseSession) {
        while !state.isStopping {
            applyNotifications(session)
            state.waitForStop(seconds: configuration.schedulerIntervalSeconds)
        }
    }

    /// Verifies and applies the notifications that are due (receipt_notifications), a batch at a time, until none is
    /// left or the worker stops. Each is written back under its own lease: a worker that dies (or stops in the
    /// middle of a batch) leaves the rest to be claimed again when the lease expires.
    func applyNotifications(_ session: DatabaseSession) {
        guard let verifier = signedData else { return }
        while !state.isStopping {
            let claimed = session.perform(giveUp: { true }) { store in
                try store.claimNotifications(
                    worker: configuration.workerId, limit: Self.notificationBatch,
                    leaseSeconds: configuration.leaseSeconds, maxAttempts: configuration.retry.maxAttempts
                )
            }
            guard case .success(let batch) = claimed, !batch.isEmpty else { return }
            for notification in batch where !state.isStopping {
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

    private func log(
        _ notification: ClaimedNotification, result: [String: Any],
        written: Result<(state: String, reason: String?), any Error>?
    ) {
        let note = result["notification"] as? [String: Any]
        var metadata: Logger.Metadata = ["notification": "\(notification.id)"]
        if let type = note?["type"] as? String { metadata["type"] = "\(type)" }
        if let uuid = note?["uuid"] as? String { metadata["uuid"] = "\(uuid)" }
        switch written {
        case .success(let (state, recordedReason)):
            events.notificationWritten(state, recordedReason)
            metadata["state"] = "\(state)"
            if let reason = recordedReason ?? result["reason"] as? String { metadata["reason"] = "\(reason)" }
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
