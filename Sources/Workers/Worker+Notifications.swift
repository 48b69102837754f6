import AppStoreSignedData
import Foundation
import Logging
import ReceiptQueue
import ThreadSupport

extension Worker {
    /// The most notifications a worker holds (claimed, not yet written back).
    static let notificationBatch = 50
    /// Notifications a verifying thread rejects itself (forgeries) are written back together, this many at most.
    static let rejectionBatch = 16

    /// Verifies one notification's signed payload (the worker's `SignedDataVerifier`, or a stand-in in tests).
    typealias NotificationVerification = @Sendable (String) throws(SignedDataError) -> SignedNotification

    /// The notifications loop, with the worker's verifier.
    func notificationLoop(_ session: DatabaseSession) {
        guard let verifier = signedData else { return }
        notificationLoop(session) { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) }
    }

    /// The notifications loop: claims the notifications that are due (oldest first, up to `notificationBatch` in
    /// hand), and `notificationThreads` threads verify them side by side and write each back under its own lease;
    /// so one notification waiting on Apple's OCSP responders, or a flood of forgeries, does not hold up the rest.
    /// Meanwhile this thread renews the leases of every notification in hand each third of the lease, so a slow
    /// batch is not claimed again by another worker while in hand. Until the worker stops and the threads have
    /// returned. All on the maintenance loop's connection (`session`), held only for each statement.
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
        guard !threads.isEmpty else { return }
        let renewEvery = configuration.leaseSeconds / 3
        var nextRenewal = Self.now() + renewEvery
        var nextClaim = Self.now()
        // While the worker runs, claim; once it stops, keep renewing until the threads have written what they hold.
        while inHand.runningThreads > 0 {
            let now = Self.now()
            if now >= nextRenewal {
                renewNotificationLeases(session, inHand.held)
                nextRenewal = now + renewEvery
            }
            let (waiting, held) = inHand.counts
            if !state.isStopping, now >= nextClaim, waiting < threads.count, held < Self.notificationBatch {
                let limit = Self.notificationBatch - held
                let claimed = claimNotifications(session, limit: limit)
                inHand.add(claimed)
                // Fewer due than asked for: look again in a scheduler interval.
                if claimed.count < limit { nextClaim = now + configuration.schedulerIntervalSeconds }
                continue
            }
            if !state.isStopping, now >= nextClaim, held < Self.notificationBatch {
                inHand.waitForFewerWaiting(than: threads.count, timeout: .milliseconds(50))
            } else {
                state.waitForStop(seconds: max(0.005, min(0.05, min(nextClaim, nextRenewal) - now)))
                if state.isStopping { Thread.sleep(forTimeInterval: 0.01) }
            }
        }
        for thread in threads { thread.join() }
    }

    private func claimNotifications(_ session: DatabaseSession, limit: Int) -> [ClaimedNotification] {
        let claimed = session.perform(giveUp: { true }) { store in
            try store.claimNotifications(
                worker: configuration.workerId, limit: limit,
                leaseSeconds: configuration.leaseSeconds, maxAttempts: configuration.retry.maxAttempts
            )
        }
        switch claimed {
        case .success(let batch):
            return batch
        case .failure(let error):
            logger.error("claiming notifications failed", metadata: ["error": "\(error)"])
            return []
        case nil:
            return []
        }
    }

    /// One verifying thread: takes the oldest claimed notification, verifies it and writes it back, until the worker
    /// stops. What the worker rejects itself (forgeries) is written back in batches: when `rejectionBatch` have
    /// gathered, or no notification is waiting.
    private func verifyingLoop(
        _ session: DatabaseSession, inHand: NotificationsInHand, verify: NotificationVerification
    ) {
        var rejected: [(notification: ClaimedNotification, result: NotificationOutcome)] = []
        while !state.isStopping {
            guard let notification = inHand.next(timeout: rejected.isEmpty ? .milliseconds(100) : .zero) else {
                writeRejected(rejected, session, inHand)
                rejected = []
                continue
            }
            let result = NotificationResult.result(
                verifying: notification, with: verify,
                sandboxPolicy: configuration.rules.sandboxPolicy, retry: configuration.retry,
                random: Double.random(in: 0..<1)
            )
            if result.kind == .rejected {
                rejected.append((notification, result))
                if rejected.count >= Self.rejectionBatch {
                    writeRejected(rejected, session, inHand)
                    rejected = []
                }
                continue
            }
            let written = session.perform(giveUp: { true }) { store in
                try store.applyNotification(notification, result: result)
            }
            inHand.release([notification])
            log(notification, result: result, written: written)
        }
        writeRejected(rejected, session, inHand)
    }

    private func writeRejected(
        _ rejected: [(notification: ClaimedNotification, result: NotificationOutcome)], _ session: DatabaseSession,
        _ inHand: NotificationsInHand
    ) {
        guard !rejected.isEmpty else { return }
        let written = session.perform(giveUp: { true }) { store in try store.writeRejectedNotifications(rejected) }
        inHand.release(rejected.map(\.notification))
        for (notification, result) in rejected {
            let outcome: Result<(state: String, reason: String?), any Error>? = written.map { written in
                written.map { states in
                    let state = states[notification.id] ?? "lost"
                    return (state, state == "rejected" ? (result.reason ?? .invalidSignature).rawValue : nil)
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
        _ notification: ClaimedNotification, result: NotificationOutcome,
        written: Result<(state: String, reason: String?), any Error>?
    ) {
        var metadata: Logger.Metadata = ["notification": "\(notification.id)"]
        if let note = result.notification {
            metadata["type"] = "\(note.type)"
            metadata["uuid"] = "\(note.uuid)"
        }
        switch written {
        case .success(let (state, recordedReason)):
            events.notificationWritten(state, recordedReason)
            metadata["state"] = "\(state)"
            if let reason = recordedReason ?? result.reason?.rawValue { metadata["reason"] = "\(reason)" }
            if let error = result.error { metadata["error"] = "\(error)" }
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
