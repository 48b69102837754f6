import Dispatch
import Foundation
import Logging
import ReceiptQueue

extension Worker {
    /// Renews leases of jobs in hand (every third of the lease), runs the scheduler, notices a finished drain,
    /// prunes old jobs when retention is set, and with a Server API client answers the refund requests due.
    /// (App Store Server Notifications have a loop of their own.)
    func maintenanceLoop(_ session: DatabaseSession) {
        let renewEvery = configuration.leaseSeconds / 3
        var nextRenewal = Self.now() + renewEvery
        var nextSweep = Self.now()
        var nextPrune = Self.now() + min(60, configuration.retentionIntervalSeconds)
        let subscriptions = subscriptionRefresher()
        let reconciler = reconciler()
        var nextRefunds = Self.now()
        let refunds = refundRequestSender()
        let tick = min(renewEvery, configuration.schedulerIntervalSeconds, 0.5)
        // With --drain, the drain is checked as soon as the last job in hand is written, not only every scheduler
        // interval: the wave's end is then noticed in milliseconds.
        var wasHolding = false

        while !state.everythingWritten {
            let now = Self.now()
            let holding = state.heldCount > 0
            if configuration.drain && wasHolding && !holding && !state.isStopping { checkDrain(session) }
            wasHolding = holding
            if now >= nextRenewal {
                renewLeases(session)
                nextRenewal = now + renewEvery
            }
            if now >= nextSweep && !state.isStopping {
                if configuration.runScheduler { sweep(session) }
                if configuration.drain { checkDrain(session) }
                nextSweep = now + configuration.schedulerIntervalSeconds
            }
            if let retention = configuration.retention, now >= nextPrune, !state.isStopping {
                prune(session, retention)
                nextPrune = now + configuration.retentionIntervalSeconds
            }
            if let refunds, now >= nextRefunds, !state.isStopping {
                answerRefundRequests(session, refunds)
                nextRefunds = now + configuration.refundRequestIntervalSeconds
            }
            if let subscriptions, !state.isStopping {
                subscriptions.tick(session, now: now, stopping: { [self] in state.isStopping })
            }
            if let reconciler, !state.isStopping {
                reconciler.tick(session, now: now, stopping: { [self] in state.isStopping })
            }
            if configuration.drain && holding {
                state.waitForEmptyHands(seconds: tick)
            } else {
                Thread.sleep(forTimeInterval: tick)
            }
        }
        subscriptions?.wait()
        reconciler?.wait()
        refundPass.wait()
    }

    /// `work`'s refund-request answers: only with a Server API client (without one nothing can be sent), the policy
    /// answering after CONSUMPTION_ANSWER_AFTER_MINUTES.
    func refundRequestSender() -> RefundRequestSender? {
        serverAPI.map {
            RefundRequestSender(
                client: $0, answerAfterMinutes: configuration.consumptionAnswerAfterMinutes, logger: logger
            )
        }
    }

    /// Starts a pass over the refund requests due, unless one is still running: Apple's answers are waited for on
    /// `refundRequests`, and the shared connection is held only for the statements, so leases are renewed and
    /// notifications applied meanwhile.
    private func answerRefundRequests(_ session: DatabaseSession, _ sender: RefundRequestSender) {
        guard refundPass.wait(timeout: .now()) == .success else { return }
        refundPass.enter()
        refundRequests.async { [self] in
            defer { refundPass.leave() }
            let due = session.perform(giveUp: { true }) { store in try sender.due(store.connection) }
            var requests: [RefundRequestSender.Due] = []
            switch due {
            case .success(let found): requests = found
            case .failure(let error): logger.error("refund requests not read", metadata: ["error": "\(error)"])
            case nil: break
            }
            var pass = RefundRequestSender.Pass()
            for request in requests {
                let sent = sender.send(request)
                let recorded = session.perform(giveUp: { state.isStopping }) { store in
                    try sender.record(store.connection, request, sent)
                }
                switch recorded {
                case .success(let state): pass.count(state)
                case .failure(let error):
                    // Held until next_attempt_at, then sent again.
                    logger.error(
                        "refund request's answer not recorded",
                        metadata: ["request": "\(request.id)", "error": "\(error)"]
                    )
                case nil: break
                }
            }
            if pass != RefundRequestSender.Pass() {
                logger.info(
                    "refund requests answered",
                    metadata: ["answered": "\(pass.answered)", "retried": "\(pass.retried)", "failed": "\(pass.failed)"]
                )
            }
        }
    }

    private func renewLeases(_ session: DatabaseSession) {
        let leases = state.heldLeases
        guard !leases.isEmpty else { return }
        let renewed = session.perform(giveUp: { true }) { store in
            try store.renewLeases(
                worker: configuration.workerId, leases: leases, leaseSeconds: configuration.leaseSeconds
            )
        }
        if case .success(let count) = renewed, count < leases.count {
            logger.debug("some leases were no longer ours", metadata: ["held": "\(leases.count)", "renewed": "\(count)"])
        }
    }

    private func sweep(_ session: DatabaseSession) {
        let swept = session.perform(giveUp: { true }) { store in
            try store.sweep(maxAttempts: configuration.retry.maxAttempts)
        }
        switch swept {
        case .success(let result) where result.total > 0:
            events.swept(result)
            if result.rescued > 0 {
                logger.warning("rescued jobs whose lease expired", metadata: ["jobs": "\(result.rescued)"])
            }
            if result.dead > 0 {
                logger.error("jobs out of attempts moved to dead letters", metadata: ["jobs": "\(result.dead)"])
            }
        case .failure(let error):
            logger.error("scheduler pass failed", metadata: ["error": "\(error)"])
        default:
            break
        }
    }

    private func checkDrain(_ session: DatabaseSession) {
        let unfinished = session.perform(giveUp: { true }) { store in try store.unfinishedCount() }
        if case .success(0) = unfinished, state.heldCount == 0 {
            logger.info("drained: every job is final")
            state.markDrained()
        }
    }

    private func prune(_ session: DatabaseSession, _ retention: Retention) {
        var total = 0
        while !state.isStopping {
            let pruned = session.perform(giveUp: { true }) { store in try store.prune(retention) }
            if case .failure(let error) = pruned {
                // Not silent: retention that keeps failing (a right not granted after an upgrade) lets tables grow.
                logger.error("retention failed; tried again at the next pass", metadata: ["error": "\(error)"])
            }
            guard case .success(let count) = pruned, count > 0 else { break }
            total += count
        }
        if total > 0 { logger.info("retention pass", metadata: ["rows": "\(total)"]) }
        // What the pass left that it may delete (rows locked by others, a prune that failed): the gauge an alert
        // watches. Read after every pass, successful or not; a failed read keeps the gauge's last values.
        let backlog = session.perform(giveUp: { true }) { store in try store.retentionBacklog(retention) }
        switch backlog {
        case .success(let samples): events.retentionSampled(samples)
        case .failure(let error): logger.error("retention backlog not read", metadata: ["error": "\(error)"])
        case nil: break
        }
    }
}
