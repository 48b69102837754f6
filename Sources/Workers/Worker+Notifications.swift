import AppStoreSignedData
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ThreadSupport

extension Worker {
    /// The most notifications a worker holds (claimed, not yet written back).
    static let notificationsInHand = 200
    /// The most notifications one claim takes.
    static let notificationClaim = 100
    /// The most notifications one write-back statement takes: its transaction holds their rows (and what applying
    /// them locks) until it commits.
    static let notificationWriteBatch = 50
    /// Verdicts waiting before an overflow writer takes a batch: the loop writes whatever is verified as soon as it
    /// is free, so this many pile up only while it is busy.
    static let notificationOverflowBacklog = 10
    /// Where `receive_notification()` (and `receipt_notification_release()`) announce new notifications.
    static let notificationChannel = "receipt_notifications"

    /// Verifies one notification's signed payload (the worker's `SignedDataVerifier`, or a stand-in in tests).
    typealias NotificationVerification = @Sendable (String) throws(SignedDataError) -> SignedNotification

    /// The notifications loop, with the worker's verifier.
    func notificationLoop(_ session: DatabaseSession) {
        guard let verifier = signedData else { return }
        notificationLoop(session) { (text: String) throws(SignedDataError) in try verifier.verifyNotification(text) }
    }

    /// The notifications loop: claims the notifications that are due (oldest first, up to `notificationsInHand`),
    /// `notificationThreads` threads verify them side by side, and this thread writes the verdicts back in batches
    /// (`receipt_notification_apply_batch()`, forgeries set-based with `receipt_notification_reject()`), each
    /// under its notification's own lease; so one notification waiting on Apple's OCSP responders, or a flood of
    /// forgeries, does not hold up the rest. Meanwhile it renews the leases of every notification in hand each third
    /// of the lease, so a slow batch is not claimed again by another worker while in hand.
    /// New notifications wake it at once: it LISTENs on `receipt_notifications` (which `receive_notification()`
    /// notifies) while it holds nothing, and claims again when a wake-up came meanwhile; the scheduler interval's poll
    /// remains for retries that fall due and for a missed wake-up. Once the worker stops, notifications not yet
    /// verified are given back (`receipt_notification_release()`) and the verdicts in hand written. All on the
    /// maintenance loop's connection (`session`), held only for each statement or a short wait.
    func notificationLoop(_ session: DatabaseSession, verify: @escaping NotificationVerification) {
        let inHand = NotificationsInHand()
        var threads: [DedicatedThread] = []
        for index in 0..<max(1, configuration.notificationThreads) {
            inHand.threadStarted()
            do {
                threads.append(
                    try DedicatedThread.start(name: "notify-\(index)") { [self] in
                        defer { inHand.threadEnded() }
                        verifyingLoop(inHand: inHand, verify: verify)
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
        // Claimed again once fewer than this wait for a thread: enough queued to keep every thread busy while the
        // next claim is on its way, few enough that a flood does not fill the hand ahead of what comes next.
        let refillBelow = max(2 * threads.count, Self.notificationClaim / 2)
        for index in 1..<max(1, configuration.writeConnections) {
            do {
                threads.append(try DedicatedThread.start(name: "notify-write-\(index + 1)") { [self] in
                    overflowApplyLoop(index, inHand: inHand)
                })
            } catch {
                logger.error(
                    "could not start an overflow writer of notifications; writing on fewer connections",
                    metadata: ["writers": "\(index)", "error": "\(error)"]
                )
                break
            }
        }
        let renewEvery = configuration.leaseSeconds / 3
        var nextRenewal = Self.now() + renewEvery
        var nextPoll = Self.now()
        var wakeUp = NotificationWakeUp(channel: Self.notificationChannel)
        var woken = true
        while true {
            let now = Self.now()
            if now >= nextRenewal {
                renewNotificationLeases(session, inHand.held)
                nextRenewal = now + renewEvery
            }
            let stopping = state.isStopping
            if stopping { giveBack(inHand.takeWaiting(), session, inHand) }
            let (waiting, verified, held) = inHand.counts
            if stopping && verified == 0 && inHand.runningThreads == 0 { break }
            if verified > 0 {
                write(inHand.takeVerified(limit: Self.notificationWriteBatch), session, inHand)
                continue
            }
            let wantsClaim = !stopping && (woken || now >= nextPoll)
            let room = min(Self.notificationClaim, Self.notificationsInHand - held)
            if wantsClaim, waiting < refillBelow, room > 0 {
                let claimed = claimNotifications(session, limit: room, wakeUp: &wakeUp)
                inHand.add(claimed)
                // All that was asked for: more may be due at once. Fewer: the next wake-up, or the next poll.
                woken = claimed.count == room
                if claimed.count < room { nextPoll = now + configuration.schedulerIntervalSeconds }
                continue
            }
            if !stopping && held == 0 && !woken {
                woken = wakeUp.wait(session, seconds: min(nextPoll, nextRenewal) - now, stopping: { state.isStopping })
                continue
            }
            // Notifications in hand: wait for a verdict (or room to claim), looking for wake-ups now and then.
            inHand.waitForWork(
                fewerWaitingThan: wantsClaim ? refillBelow : 0, heldBelow: Self.notificationsInHand,
                timeout: .milliseconds(stopping ? 10 : 20)
            )
            if !stopping && !woken { woken = wakeUp.poll(session) }
        }
        for thread in threads { thread.join() }
    }

    /// An overflow writer of notifications (`WRITE_CONNECTIONS` above 1): writes a batch whenever a backlog of
    /// verdicts waits (`notificationOverflowBacklog`), that is while the loop is busy with a statement of its own, on a
    /// connection opened on first use and closed after `overflowWriterIdleSeconds` without a batch. Ends with the
    /// loop: once the worker stops, the verifying threads are done and no verdict waits.
    private func overflowApplyLoop(_ index: Int, inHand: NotificationsInHand) {
        let session = DatabaseSession(url: databaseURL, name: "notify-write-\(index + 1)", logger: logger)
        defer { session.close() }
        var lastBatch = Self.now()
        while !(state.isStopping && inHand.counts.verified == 0 && inHand.runningThreads == 0) {
            let batch = inHand.takeVerified(
                limit: Self.notificationWriteBatch, backlog: Self.notificationOverflowBacklog, timeout: .milliseconds(50)
            )
            if batch.isEmpty {
                if Self.now() - lastBatch >= configuration.overflowWriterIdleSeconds { session.close() }
                continue
            }
            write(batch, session, inHand)
            lastBatch = Self.now()
        }
    }

    private func claimNotifications(
        _ session: DatabaseSession, limit: Int, wakeUp: inout NotificationWakeUp
    ) -> [ClaimedNotification] {
        let claimed = session.perform(giveUp: { true }) { store in
            // The wake-ups that came so far are answered by this claim.
            try wakeUp.take(store)
            return try store.claimNotifications(
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

    /// One verifying thread: takes the oldest claimed notification and verifies it, until the worker stops; the
    /// notifications loop writes the verdicts back.
    private func verifyingLoop(inHand: NotificationsInHand, verify: NotificationVerification) {
        while !state.isStopping {
            guard let notification = inHand.next(timeout: .milliseconds(100)) else { continue }
            let result = NotificationResult.result(
                verifying: notification, with: verify,
                sandboxPolicy: configuration.rules.sandboxPolicy, retry: configuration.retry,
                random: Double.random(in: 0..<1)
            )
            inHand.verified(notification, result)
        }
    }

    /// Writes back a batch of verdicts: forgeries (rejected before anything they say was read) in one set-based
    /// statement, the rest in one `receipt_notification_apply_batch()` call. When that call fails, nothing of it was
    /// written, and each is written on its own, so one failing notification holds up no other (it is claimed again
    /// when its lease expires). On a connection problem they are left to their leases, as before.
    private func write(_ batch: [NotificationsInHand.Verified], _ session: DatabaseSession, _ inHand: NotificationsInHand) {
        var forgeries: [NotificationsInHand.Verified] = []
        var others: [NotificationsInHand.Verified] = []
        for item in batch {
            if item.result.kind == .rejected && item.result.notification == nil {
                forgeries.append(item)
            } else {
                others.append(item)
            }
        }
        if !forgeries.isEmpty {
            let written = session.perform(giveUp: { true }) { store in try store.rejectNotifications(forgeries) }
            for (notification, result) in forgeries {
                log(notification, result: result, written: written.map { written in
                    written.map { ids in
                        ids.contains(notification.id)
                            ? ("rejected", (result.reason ?? .invalidSignature).rawValue) : ("lost", nil)
                    }
                })
            }
        }
        // Revocations go in transactions of their own, after the batch; the rest in a fixed lock order.
        let (alone, batched) = Self.lockOrdered(others)
        if !batched.isEmpty { apply(batched, session) }
        for item in alone { apply([item], session) }
        inHand.release(batch.map(\.notification))
    }

    /// Orders a write-back batch so that two batches written side by side (`WRITE_CONNECTIONS`, or two workers)
    /// cannot wait on each other in a cycle:
    /// - REFUND, REVOKE and REFUND_REVERSED are taken out, to be written one per transaction: each takes the
    ///   revocation lock exclusively, which a batch holding it shared since an earlier DID_RENEW credit (rule 14)
    ///   would otherwise wait for while the other batch, the same shape, waits for it: a deadlock, found by
    ///   PostgreSQL after `deadlock_timeout` and paid for with the whole batch written again one by one.
    /// - The rest are sorted by environment, then the chain (original transaction id), then Apple's signing time, so
    ///   batches lock chains in the same order. The SQL does not depend on the order in which a batch applies its
    ///   notifications (newer signatures win whatever the order); a chain's own keep Apple's order.
    static func lockOrdered(
        _ items: [NotificationsInHand.Verified]
    ) -> (alone: [NotificationsInHand.Verified], batched: [NotificationsInHand.Verified]) {
        let revocations: Set<String> = ["REFUND", "REVOKE", "REFUND_REVERSED"]
        var alone: [NotificationsInHand.Verified] = []
        var batched: [(key: (String, String, Int64), offset: Int, item: NotificationsInHand.Verified)] = []
        for (offset, item) in items.enumerated() {
            let facts = item.result.notification
            if let type = facts?.type, revocations.contains(type) {
                alone.append(item)
                continue
            }
            let key = (facts?.environment ?? "", Self.chain(item.result), facts?.signedDateMs ?? 0)
            batched.append((key, offset, item))
        }
        batched.sort { $0.key < $1.key || ($0.key == $1.key && $0.offset < $1.offset) }
        return (alone, batched.map(\.item))
    }

    /// The chain a notification's apply locks, as `receipt_subscription_apply()` names it: the transaction's original
    /// id, else the renewal info's, else the transaction's own id.
    static func chain(_ result: NotificationOutcome) -> String {
        for id in [
            result.transaction?.originalTransactionId, result.renewal?.originalTransactionId,
            result.transaction?.transactionId,
        ] {
            if let id, !id.isEmpty { return id }
        }
        return ""
    }

    /// Writes `others` (verified, not forgeries) in one `receipt_notification_apply_batch()` call; when that fails
    /// nothing of it was written, and each is written on its own.
    private func apply(_ others: [NotificationsInHand.Verified], _ session: DatabaseSession) {
        let written = session.perform(giveUp: { true }) { store in try store.applyNotifications(others) }
        if case .failure(let error) = written {
            logger.warning(
                "a batch of notifications could not be written together; writing them one by one",
                metadata: ["notifications": "\(others.count)", "error": "\(error)"]
            )
            for (notification, result) in others {
                // One that lost only to a concurrent transaction (a deadlock the server broke) is written again,
                // twice at most; otherwise it waits for its lease to expire and is claimed again.
                var one = session.perform(giveUp: { true }) { store in
                    try store.applyNotification(notification, result: result)
                }
                for _ in 0..<2 {
                    guard case .failure(let error as PostgresError) = one, error.isTransientConflict else { break }
                    one = session.perform(giveUp: { true }) { store in
                        try store.applyNotification(notification, result: result)
                    }
                }
                log(notification, result: result, written: one)
            }
        } else {
            for (notification, result) in others {
                log(notification, result: result, written: written.map { written in
                    written.map { states in states[notification.id] ?? ("lost", nil) }
                })
            }
        }
    }

    /// Notifications claimed and not verified when the worker stops: given back, claimable again at once.
    private func giveBack(_ notifications: [ClaimedNotification], _ session: DatabaseSession, _ inHand: NotificationsInHand) {
        guard !notifications.isEmpty else { return }
        let released = session.perform(giveUp: { true }) { store in try store.releaseNotifications(notifications) }
        inHand.release(notifications)
        if case .failure(let error) = released {
            logger.error(
                "giving notifications back failed; they are claimed again when their leases expire",
                metadata: ["notifications": "\(notifications.count)", "error": "\(error)"]
            )
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
