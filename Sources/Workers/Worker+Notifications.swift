import AppStoreSignedData
import Foundation
import Logging
import ReceiptQueue
import ThreadSupport

extension Worker {
    /// Notifications in hand at once, across the verifying threads: each claims its share of this.
    static let notificationBatch = 50

    /// Verifies one notification's signed payload (the worker's `SignedDataVerifier`, or a stand-in in tests).
    typealias NotificationVerification = @Sendable (String) throws(SignedDataError) -> SignedNotification

    /// The notifications loop, with the worker's verifier.
    func notificationLoop(_ session: DatabaseSession) {
        guard let verifier = signedData else { return }
        notificationLoop(session) { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) }
    }

    /// The notifications loop: `notificationThreads` threads each claim their share of the due notifications, verify
    /// them and write each back, until the worker stops; so one notification waiting on Apple's OCSP responders, or a
    /// flood of forgeries, does not hold up the rest. This thread meanwhile renews the leases of what they hold every
    /// third of the lease, so a slow batch is not claimed again by another worker while in hand. All of it on the
    /// maintenance loop's connection (`session`), held only for each statement.
    func notificationLoop(_ session: DatabaseSession, verify: @escaping NotificationVerification) {
        let inHand = NotificationsInHand()
        var threads: [DedicatedThread] = []
        for index in 0..<max(1, configuration.notificationThreads) {
            inHand.threadStarted()
            do {
                threads.append(
                    try DedicatedThread.start(name: "notify-\(index)") { [self] in
                        defer { inHand.threadEnded() }
                        verifyingLoop(session, inHand: inHand, verify: verify)
                    }
                )
            } catch {
                inHand.threadEnded()
                logger.error(
                    "could not start a notification thread; verifying on fewer",
                    metadata: ["threads": "\(threads.count)", "error": "\(error)"]
                )
                break
            }
        }
        if threads.isEmpty {  // no thread could start: verify here, without renewals
            verifyingLoop(session, inHand: inHand, verify: verify)
            return
        }
        let renewEvery = configuration.leaseSeconds / 3
        var nextRenewal = Self.now() + renewEvery
        while inHand.runningThreads > 0 {
            Thread.sleep(forTimeInterval: min(0.05, renewEvery))
            guard Self.now() >= nextRenewal else { continue }
            renewNotificationLeases(session, inHand.held)
            nextRenewal = Self.now() + renewEvery
        }
        for thread in threads { thread.join() }
    }

    /// One verifying thread: claims a share of the due notifications and applies them, until the worker stops;
    /// waits a scheduler interval whenever fewer were due than it asked for.
    private func verifyingLoop(
        _ session: DatabaseSession, inHand: NotificationsInHand, verify: NotificationVerification
    ) {
        let share = max(1, Self.notificationBatch / max(1, configuration.notificationThreads))
        while !state.isStopping {
            let claimed = applyNotifications(session, limit: share, inHand: inHand, verify: verify)
            if claimed < share { state.waitForStop(seconds: configuration.schedulerIntervalSeconds) }
        }
    }

    /// Claims up to `limit` due notifications (receipt_notifications), verifies each and writes it back under its
    /// own lease; returns how many were claimed. A worker that dies (or stops in the middle) leaves the rest to be
    /// claimed again when their lease expires.
    func applyNotifications(
        _ session: DatabaseSession, limit: Int, inHand: NotificationsInHand, verify: NotificationVerification
    ) -> Int {
        let claimed = session.perform(giveUp: { true }) { store in
            try store.claimNotifications(
                worker: configuration.workerId, limit: limit,
                leaseSeconds: configuration.leaseSeconds, maxAttempts: configuration.retry.maxAttempts
            )
        }
        guard case .success(let batch) = claimed, !batch.isEmpty else { return 0 }
        inHand.hold(batch)
        defer { inHand.release(batch) }
        // Rejected by the worker itself (forgeries above all): written together once the batch is verified.
        var rejected: [(notification: ClaimedNotification, result: [String: Any])] = []
        for notification in batch where !state.isStopping {
            let result = NotificationResult.result(
                verifying: notification, with: verify,
                sandboxPolicy: configuration.rules.sandboxPolicy, retry: configuration.retry,
                random: Double.random(in: 0..<1)
            )
            if result["outcome"] as? String == "rejected" {
                rejected.append((notification, result))
                continue
            }
            let written = session.perform(giveUp: { true }) { store in
                try store.applyNotification(notification, result: result)
            }
            inHand.release(notification)
            log(notification, result: result, written: written)
        }
        writeRejected(rejected, session)
        return batch.count
    }

    private func writeRejected(
        _ rejected: [(notification: ClaimedNotification, result: [String: Any])], _ session: DatabaseSession
    ) {
        guard !rejected.isEmpty else { return }
        let written = session.perform(giveUp: { true }) { store in try store.writeRejectedNotifications(rejected) }
        for (notification, result) in rejected {
            let outcome: Result<(state: String, reason: String?), any Error>? = written.map { written in
                written.map { states in
                    let state = states[notification.id] ?? "lost"
                    return (state, state == "rejected" ? result["reason"] as? String ?? "invalid_signature" : nil)
                }
            }
            log(notification, result: result, written: outcome)
        }
    }

    private func renewNotificationLeases(_ session: DatabaseSession, _ held: [ClaimedNotification]) {
        guard !held.isEmpty else { return }
        let renewed = session.perform(giveUp: { true }) { store in
            try store.renewNotificationLeases(
                worker: configuration.workerId, notifications: held, leaseSeconds: configuration.leaseSeconds
            )
        }
        if case .success(let count) = renewed, count < held.count {
            logger.debug(
                "some notification leases were not renewed (written meanwhile, or no longer ours)",
                metadata: ["held": "\(held.count)", "renewed": "\(count)"]
            )
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
