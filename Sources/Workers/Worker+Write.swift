import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ThreadSupport

extension Worker {
    /// Writes outcomes in batches until claiming has ended and nothing is in hand. At the shutdown deadline,
    /// jobs still in hand are given back to the queue (their late answers are refused by the lease guard).
    func writeLoop() {
        writeBatches(on: "write") {
            state.takeOutcomes(
                max: configuration.writeBatch, timeout: 0.25, gather: min(configuration.writeBatch, Self.gather),
                linger: Self.linger
            )
        }
    }

    /// An overflow writer (`WRITE_CONNECTIONS` above 1): writes a whole `writeBatch` whenever one waits beside the
    /// batch the first writer is writing: answers come faster than it writes them (a wave of answers), and a second
    /// statement may use a database core the first cannot. (The claim loop pauses at two batches answered, the one
    /// being written and one waiting.) Only whole batches: below one the first writer keeps up, and a second would
    /// split its batches and contend with it for the same cores. On a connection of its own, opened on first use
    /// and closed after `overflowWriterIdleSeconds` without a batch. Ends with the first writer's conditions.
    func overflowWriteLoop(_ index: Int) {
        writeBatches(on: "write-\(index + 1)", closingAfterIdle: configuration.overflowWriterIdleSeconds) {
            state.takeBacklog(max: configuration.writeBatch, backlog: configuration.writeBatch, timeout: 0.25)
        }
    }

    /// A writer's loop, on a connection of its own named `name`: writes what `take` returns until claiming has
    /// ended and nothing is in hand (an empty batch then), and at the shutdown deadline gives back the jobs in hand
    /// that no writer is writing. With `closingAfterIdle`, the connection is closed after that many seconds without
    /// a batch, and opened again by the next.
    private func writeBatches(on name: String, closingAfterIdle idle: Double? = nil, take: () -> [JobOutcome]) {
        let session = DatabaseSession(url: databaseURL, name: name, logger: logger)
        defer { session.close() }
        var lastBatch = Self.now()
        while true {
            if state.deadlinePassed {
                releaseEverything(session)
                return
            }
            let batch = take()
            if batch.isEmpty {
                if state.everythingWritten { return }
                if let idle, Self.now() - lastBatch >= idle { session.close() }
                continue
            }
            write(batch, session)
            lastBatch = Self.now()
        }
    }

    /// Writes `batch`; when the database refuses it, each outcome on its own, and one it refuses only because of a
    /// concurrent transaction (a deadlock it broke) up to `conflictRetries` times more before the refusal is
    /// recorded as a retry that costs the attempt.
    private func write(_ batch: [JobOutcome], _ session: DatabaseSession, conflictRetries: Int = 2) {
        let written = session.perform(giveUp: { state.deadlinePassed }) { store in try store.complete(batch) }
        switch written {
        case nil:
            // Gave up at the shutdown deadline with the database away: the leases expire and the scheduler
            // rescues these jobs; nothing was credited.
            logger.error("could not write outcomes before the deadline", metadata: ["jobs": "\(batch.count)"])
            _ = state.finished(batch.map(\.lease.jobId))
        case .success(let completions):
            let seen = report(completions, batch)
            if !seen.isEmpty { creditSeen(seen, session) }
        case .failure(let error) where batch.count > 1:
            logger.error("batch write failed; writing one by one", metadata: ["error": "\(error)"])
            for outcome in batch { write([outcome], session) }
        case .failure(let error as PostgresError) where error.isTransientConflict && conflictRetries > 0:
            logger.warning(
                "outcome write lost to a concurrent transaction; writing it again",
                metadata: ["job_id": "\(batch[0].lease.jobId)", "error": "\(error)"]
            )
            write(batch, session, conflictRetries: conflictRetries - 1)
        case .failure(let error):
            let outcome = batch[0]
            logger.error("outcome write failed", metadata: ["job_id": "\(outcome.lease.jobId)", "error": "\(error)"])
            if let fallback = writeFailure(outcome, error) {
                // Record why in the job (a retry that costs the attempt, so a job that can never be written ends
                // dead with this error rather than circling through lease rescues).
                write([fallback], session)
            } else {
                // Even the bare retry could not be written: the lease will expire and the scheduler rescues the job.
                _ = state.finished([outcome.lease.jobId])
            }
        }
    }

    /// A retry carrying only the write error, for an outcome the database refused; nil when `outcome` already is one.
    func writeFailure(_ outcome: JobOutcome, _ error: any Error) -> JobOutcome? {
        let bare = outcome.kind == .retry && outcome.candidates.isEmpty && outcome.cancelled.isEmpty
            && outcome.error?.hasPrefix("the outcome could not be written") == true
        guard !bare else { return nil }
        return JobOutcome(
            lease: outcome.lease, kind: .retry,
            error: "the outcome could not be written (\(outcome.kind.rawValue)): \(error)",
            appleStatus: outcome.appleStatus, environment: outcome.environment,
            retryInSeconds: outcome.retryInSeconds ?? configuration.retry.baseSeconds, maxAttempts: outcome.maxAttempts
        )
    }

    /// Logs and counts the verdicts written; returns the final ones whose answer showed other purchases with a token
    /// (`JobOutcome.seen`), with their jobs, for `creditSeen`.
    @discardableResult
    private func report(_ completions: [JobStore.Completion], _ batch: [JobOutcome]) -> [(JobOutcome, ClaimedJob)] {
        var seen: [(JobOutcome, ClaimedJob)] = []
        let removed = state.finished(completions.map(\.jobId))
        let outcomes = Dictionary(batch.map { ($0.lease.jobId, $0) }, uniquingKeysWith: { first, _ in first })
        let now = ContinuousClock.now
        // Verdict lines are info (retries info, dead letters error, lost leases warning): below that level the
        // metadata is not built at all, since this runs for every job.
        let logsVerdicts = logger.logLevel <= .info
        for completion in completions {
            guard let outcome = outcomes[completion.jobId] else { continue }
            let held = removed[completion.jobId]
            if !outcome.seen.isEmpty, completion.state == .verified || completion.state == .rejected,
                let job = held?.job
            {
                seen.append((outcome, job))
            }
            let seconds = held.map { (now - $0.claimedAt).seconds } ?? 0
            events.jobWritten(completion, outcome, seconds)
            guard logsVerdicts || completion.state == .lost || completion.state == .dead else { continue }
            var metadata: Logger.Metadata = [
                "job_id": "\(completion.jobId)",
                "state": "\(completion.state.rawValue)",
                "duration_ms": "\(Int(seconds * 1000))",
            ]
            if let job = held?.job {
                metadata["order_id"] = "\(job.order.orderId)"
                metadata["attempt"] = "\(job.order.attempt)"
                metadata["receipt"] = "\(job.receiptHash)"
            }
            if let reason = completion.reason { metadata["reason"] = "\(reason)" }
            if let status = outcome.appleStatus { metadata["apple_status"] = "\(status)" }
            if let environment = outcome.environment { metadata["environment"] = "\(environment.rawValue)" }
            if let key = completion.creditKey { metadata["credit_key"] = "\(key)" }
            switch completion.state {
            case .lost:
                logger.warning("lease lost before the outcome was written; outcome discarded", metadata: metadata)
            case .retry, .dead:
                metadata["error"] = "\(outcome.error ?? "")"
                metadata["retry_in_s"] = "\(Int(outcome.retryInSeconds ?? 0))"
                logger.log(level: completion.state == .dead ? .error : .info, "verdict", metadata: metadata)
            case .verified, .rejected:
                if completion.state == .rejected, let error = outcome.error { metadata["detail"] = "\(error)" }
                logger.info("verdict", metadata: metadata)
            }
        }
        return seen
    }

    /// Issue 37: offers the other purchases the written verdicts' answers showed to the ledger
    /// (`receipt_seen_credit()`), one job's at a time, each in a transaction of its own after the verdict's (never
    /// inside it: crediting takes the token's lock first, and the verdict's transaction holds job and chain locks).
    /// A failure is logged and lost nothing: the purchase comes again (Apple's notification, the next answer).
    private func creditSeen(_ seen: [(JobOutcome, ClaimedJob)], _ session: DatabaseSession) {
        let sandboxUsers: [String]? =
            if case .allowlist(let users) = configuration.rules.sandboxPolicy { users.sorted() } else { nil }
        for (outcome, job) in seen {
            guard let environment = outcome.environment else { continue }
            let source = job.kind == .receipt ? "receipt" : "transaction"
            let result = session.perform(giveUp: { state.deadlinePassed }) { store in
                try store.creditSeen(
                    jobId: job.id, environment: environment, bundleId: job.order.bundleId, source: source,
                    purchases: outcome.seen, sandboxUsers: sandboxUsers
                )
            }
            switch result {
            case .success(let credits):
                for credit in credits {
                    logger.log(
                        level: credit.ledgerId == nil ? .info : .notice,
                        "purchase seen beside an order",
                        metadata: [
                            "job_id": "\(job.id)", "transaction_id": "\(credit.transactionId)",
                            "credited_job_id": "\(credit.jobId.map(String.init) ?? "-")", "note": "\(credit.note)",
                        ]
                    )
                }
            case .failure(let error):
                logger.warning(
                    "could not offer the purchases seen beside an order; Apple's notification or the next answer brings them",
                    metadata: ["job_id": "\(job.id)", "error": "\(error)"]
                )
            case nil:
                return
            }
        }
    }

    private func releaseEverything(_ session: DatabaseSession) {
        giveBack(state.dropAll(), session, done: "gave jobs in hand back to the queue")
        state.gaveBack()
    }

    /// Releases `leases` (their jobs return to the queue at once, the attempt not counted) and logs `done`; if the
    /// database cannot be reached, the leases expire and the scheduler rescues the jobs.
    func giveBack(_ leases: [Lease], _ session: DatabaseSession, done: Logger.Message) {
        guard !leases.isEmpty else { return }
        let released = session.perform(giveUp: { true }) { store in try store.release(leases) }
        switch released {
        case .success(let count):
            logger.notice(done, metadata: ["jobs": "\(count)"])
        default:
            logger.warning(
                "could not give jobs back; their leases will expire and the scheduler will rescue them",
                metadata: ["jobs": "\(leases.count)"]
            )
        }
    }
}
