import AppStoreClient
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
            let claimed = session.perform(giveUp: { state.isStopping }) { store in
                try store.claim(
                    worker: configuration.workerId, limit: allowed, leaseSeconds: configuration.leaseSeconds
                )
            }
            switch claimed {
            case nil:
                continue
            case .failure(let error):
                logger.error("claim failed", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 1)
            case .success(let jobs):
                state.hold(jobs.map(\.withoutReceiptData))
                for job in jobs { start(job) }
                if jobs.count < allowed {
                    waitForWork(session, seconds: configuration.pollIntervalSeconds)
                }
            }
        }
    }

    /// Sleeps until a NOTIFY on receipt_jobs or the timeout.
    private func waitForWork(_ session: DatabaseSession, seconds: Double) {
        let waited = session.perform(giveUp: { state.isStopping }) { store in
            try store.connection.waitForNotifications(timeoutMilliseconds: Int(seconds * 1000))
        }
        if case .failure = waited { Thread.sleep(forTimeInterval: seconds) }
    }

    /// Starts one job's verification; its outcome goes to the write loop.
    private func start(_ job: ClaimedJob) {
        if let problem = ReceiptInput.problem(job.receiptData, maxBytes: configuration.maxReceiptBytes) {
            state.submit(decider.malformedInput(job, problem: problem))
            return
        }
        let receiptData = job.receiptData ?? ""
        let job = job.withoutReceiptData
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
