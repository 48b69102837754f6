import AppStoreClient
import AppStoreSignedData
import Foundation
import Logging
import ReceiptQueue

extension Worker {
    /// Under load, claims and writes wait up to `linger` seconds to gather about this many jobs per statement (a
    /// statement's fixed cost then spreads over many jobs); an idle worker claims and writes at once.
    static let gather = 50
    static let linger = 0.01

    /// Claims jobs while there is room, starts their Apple calls, and sleeps on NOTIFY receipt_jobs when the
    /// queue is empty.
    func claimLoop() {
        let session = DatabaseSession(url: databaseURL, name: "claim", logger: logger, channels: ["receipt_jobs"])
        defer {
            session.close()
            state.claimLoopEnded()
        }
        let limit = configuration.maxInFlight
        // Answered jobs waiting for the writer hold no Apple call, so they do not count against MAX_IN_FLIGHT; up
        // to two write batches of them may wait before claiming pauses.
        let backlog = 2 * configuration.writeBatch
        while !state.isStopping && !state.isDrained {
            let room = state.waitForRoom(
                limit: limit, backlog: backlog, timeout: configuration.pollIntervalSeconds,
                gather: min(configuration.claimBatch, limit, Self.gather), linger: Self.linger
            )
            if state.isStopping { break }
            guard room > 0 else { continue }
            let wanted = min(room, configuration.claimBatch)
            let allowed = breaker.allowance(wanted: wanted, now: Self.now())
            if allowed == 0 {
                // Apple is failing: wait for the next probe slot rather than burning attempts.
                waitForWork(session, seconds: min(0.25, configuration.pollIntervalSeconds))
                continue
            }
            let claimed = state.claiming {
                session.perform(giveUp: { state.isStopping }) { store in
                    try store.claim(
                        worker: configuration.workerId, limit: allowed, leaseSeconds: configuration.leaseSeconds
                    )
                }
            }
            switch claimed {
            case nil:
                continue
            case .failure(let error):
                logger.error("claim failed", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 1)
            case .success(let jobs):
                guard state.hold(jobs.map(\.withoutInput)) else {
                    // The writer released the jobs in hand at the shutdown deadline and stopped: these go back too.
                    giveBack(jobs.map(\.lease), session, done: "gave jobs claimed at the shutdown deadline back to the queue")
                    break
                }
                var signed: [ClaimedJob] = []
                var calls: [ClaimedJob] = []
                for job in jobs {
                    if job.kind == .signedTransaction { signed.append(job) } else { calls.append(job) }
                }
                if !signed.isEmpty { verifySignedTransactions(signed) }
                if room - jobs.count >= configuration.claimBatch {
                    // A burst (a wave, a backlog): the next claim follows at once, and overlaps these calls' start.
                    starts.async { [self, calls] in
                        for job in calls { start(job) }
                    }
                } else {
                    // Nearly full or nearly idle: no claim is waiting on this, and a hop to another thread per
                    // small batch cost more than it saved (bench at 0 ms: 4-6 % fewer verdicts per second).
                    for job in calls { start(job) }
                }
                if jobs.count < allowed {
                    waitForWork(session, seconds: configuration.pollIntervalSeconds)
                }
            }
        }
    }

    /// Sleeps until a NOTIFY on receipt_jobs, a shutdown, or the timeout. The socket is waited on in slices of at
    /// most 0.1 s (no statement is sent), so a shutdown is seen at once whatever POLL_INTERVAL_SECONDS is.
    private func waitForWork(_ session: DatabaseSession, seconds: Double) {
        let deadline = Self.now() + seconds
        while !state.isStopping {
            let slice = min(0.1, deadline - Self.now())
            guard slice > 0 else { return }
            let waited = session.perform(giveUp: { state.isStopping }) { store in
                try store.connection.waitForNotifications(timeoutMilliseconds: max(1, Int(slice * 1000)))
            }
            switch waited {
            case .success(let notifications) where !notifications.isEmpty:
                return
            case .failure:
                Thread.sleep(forTimeInterval: slice)
            case nil:
                return
            default:
                continue
            }
        }
    }

    /// Starts one job's verification; its outcome goes to the write loop.
    private func start(_ job: ClaimedJob) {
        switch job.kind {
        case .receipt:
            startReceipt(job)
        case .signedTransaction:
            verifySignedTransactions([job])
        case .transactionId:
            lookUpTransaction(job)
        case .appTransaction:
            verifyAppTransaction(job)
        }
    }

    /// A job this worker is not set up to verify: no verdict, no attempt counted; it waits, at the base retry
    /// delay, for a worker (or a configuration) that can.
    func cannotVerify(_ job: ClaimedJob, _ detail: String) {
        logger.critical(
            "cannot verify this kind of job", metadata: ["job_id": "\(job.id)", "kind": "\(job.kind)", "why": "\(detail)"]
        )
        state.submit(decider.configurationError(job, detail, random: Double.random(in: 0..<1)))
    }

    /// StoreKit 2 signed transactions: each one's chain and signature checked (a chain already checked is cached,
    /// so this is one signature check), then the rules. One block per claimed batch on a concurrent queue, off the
    /// claim loop: batches use the cores, and no thread is started per job.
    private func verifySignedTransactions(_ jobs: [ClaimedJob]) {
        guard let signedData else {
            for job in jobs { cannotVerify(job, "signed transactions are not verified by this worker") }
            return
        }
        verification.async { [self] in
            for job in jobs {
                guard let jws = job.signedTransaction, !jws.isEmpty else {
                    state.submit(decider.malformedInput(job, problem: "signed_transaction is empty"))
                    continue
                }
                do throws(SignedDataError) {
                    confirm(job.withoutInput, try SignedTransaction.verified(jws, by: signedData))
                } catch {
                    state.submit(
                        decider.outcome(for: job.withoutInput, signed: .failure(error), random: Double.random(in: 0..<1))
                    )
                }
            }
        }
    }

    /// A receipt: verifyReceipt, production first; or, with RECEIPT_SOURCE=api, the App Store Server API.
    private func startReceipt(_ job: ClaimedJob) {
        if let problem = ReceiptInput.problem(job.receiptData, maxBytes: configuration.maxReceiptBytes) {
            state.submit(decider.malformedInput(job, problem: problem))
            return
        }
        if configuration.receiptSource == .serverAPI, let serverAPI {
            readReceiptThroughAPI(job.withoutInput, serverAPI, receiptData: job.receiptData ?? "")
            return
        }
        guard let client else {
            cannotVerify(job, "receipts need verifyReceipt (APPLE_SHARED_SECRET) or RECEIPT_SOURCE=api with the App Store "
                + "Server API configured")
            return
        }
        let receiptData = job.receiptData ?? ""
        let job = job.withoutInput
        client.verify(receiptData: receiptData) { [self] result, calls in
            for call in calls { events.appleCall(call) }
            breaker.record(answered: result.appleAnswered, now: Self.now())
            let outcome = decider.outcome(for: job, result: result, random: Double.random(in: 0..<1))
            if outcome.kind == .configError {
                logger.critical(
                    "Apple refused our configuration: no verdict, no attempt counted; fix it now",
                    metadata: ["job_id": "\(job.id)", "error": "\(outcome.error ?? "")"]
                )
            }
            if calls.count > 1 {
                logger.debug(
                    "environment hop",
                    metadata: ["job_id": "\(job.id)", "calls": "\(calls.map { "\($0.endpoint.rawValue):\($0.outcome)" })"]
                )
            }
            state.submit(outcome)
        }
    }
}
