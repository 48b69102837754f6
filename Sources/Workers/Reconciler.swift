import Dispatch
import Logging
import PostgresClient
import Synchronization

/// `work`'s reconciliation (`RECONCILE_AT`, `ReconcileSchedule`): every `checkEverySeconds` the worker asks the
/// database whether yesterday's report is due and not taken (`receipt_reconciliation_claim()`, a short call on the
/// maintenance session); the worker that gets the day fetches Apple's report off the maintenance loop, compares it
/// and records the day done in one transaction (`receipt_reconcile()`, `receipt_reconciliation_finish()`), so the
/// run is stored once. That transaction, and whatever else the day needs, runs on a connection of its own, opened
/// for the day and closed after it: the maintenance session is shared with the lease renewals and the notification
/// loop, which a comparison of a large day would otherwise hold up. A report not ready yet, or a failure, leaves the
/// day waiting for another attempt. Differences are an event (`reconciliation_differences`, recorded by
/// `receipt_reconcile()`) and a warning in the log.
final class Reconciler: Sendable {
    let schedule: ReconcileSchedule
    let workerId: String
    let logger: Logger
    /// Where the reconciler's own connection goes (the worker's database).
    let databaseURL: String
    private let queue = DispatchQueue(label: "receipt-worker.reconcile")
    private let running = DispatchGroup()
    private let nextCheck: Mutex<Double>

    init(schedule: ReconcileSchedule, workerId: String, databaseURL: String, logger: Logger, firstCheck: Double) {
        self.schedule = schedule
        self.workerId = workerId
        self.databaseURL = databaseURL
        self.logger = logger
        nextCheck = Mutex(firstCheck)
    }

    /// Starts a check when one is due and none is running.
    func tick(_ session: DatabaseSession, now: Double, stopping: @escaping @Sendable () -> Bool) {
        let due = nextCheck.withLock { next in
            guard now >= next else { return false }
            next = now + schedule.checkEverySeconds
            return true
        }
        guard due, running.wait(timeout: .now()) == .success else { return }
        running.enter()
        queue.async { [self] in
            defer { running.leave() }
            reconcileIfDue(session, stopping: stopping)
        }
    }

    /// Waits for a check still running.
    func wait() {
        running.wait()
    }

    private func reconcileIfDue(_ shared: DatabaseSession, stopping: @escaping @Sendable () -> Bool) {
        let claimed = shared.perform(giveUp: { true }) { store in
            try store.connection.query(
                "SELECT receipt_reconciliation_claim($1::time, $2, $3, $4)::text AS day",
                [
                    schedule.at, workerId, String(schedule.leaseSeconds), String(schedule.maxAttempts),
                ]
            )[0, "day"]
        }
        guard case .success(let day?) = claimed else {
            if case .failure(let error) = claimed {
                logger.error("reconciliation schedule not read", metadata: ["error": "\(error)"])
            }
            return
        }
        let session = DatabaseSession(url: databaseURL, name: "reconcile", logger: logger)
        defer { session.close() }
        let fetched: ReportFetch
        do {
            fetched = try schedule.fetch(day)
        } catch {
            logger.error("Apple's sales report not fetched", metadata: ["report_date": "\(day)", "error": "\(error)"])
            finish(session, day: day, runId: nil, error: "\(error)", stopping: stopping)
            return
        }
        switch fetched {
        case .notReady(let message):
            logger.info(
                "Apple's sales report is not ready yet; asking again later",
                metadata: ["report_date": "\(day)", "apple": "\(message)", "retry_s": "\(schedule.retrySeconds)"]
            )
            finish(session, day: day, runId: nil, error: "report not ready: \(message)", stopping: stopping)
        case .lines(let lines):
            let stored = session.perform(giveUp: stopping) { store in
                try store.connection.withTransaction {
                    let run = try Reconciliation.run(reportDate: day, source: .api, lines: lines, store.connection)
                    // The day taken over by another worker (this one's lease ran out): its run is the one kept.
                    let held = try Self.finish(
                        store.connection, day: day, worker: workerId, runId: run.id, error: nil, retry: 0
                    )
                    guard held else { throw LeaseLost(day: day) }
                    return run
                }
            }
            switch stored {
            case .success(let run) where run.differences > 0:
                logger.warning(
                    "reconciliation found differences between Apple's sales report and the ledger",
                    metadata: [
                        "report_date": "\(day)", "run": "\(run.id)", "differences": "\(run.differences)",
                        "apple_rows": "\(run.appleRows)", "ledger_rows": "\(run.ledgerRows)",
                    ]
                )
            case .success(let run):
                logger.info(
                    "reconciliation: the ledger agrees with Apple's sales report",
                    metadata: ["report_date": "\(day)", "run": "\(run.id)", "apple_rows": "\(run.appleRows)"]
                )
            case .failure(let error):
                logger.error("reconciliation not stored", metadata: ["report_date": "\(day)", "error": "\(error)"])
                finish(session, day: day, runId: nil, error: "\(error)", stopping: stopping)
            case nil:
                break  // stopping: the lease runs out and the day is taken again
            }
        }
    }

    private func finish(
        _ session: DatabaseSession, day: String, runId: Int64?, error: String?,
        stopping: @escaping @Sendable () -> Bool
    ) {
        let finished = session.perform(giveUp: stopping) { store in
            try Self.finish(
                store.connection, day: day, worker: workerId, runId: runId, error: error, retry: schedule.retrySeconds
            )
        }
        if case .failure(let error) = finished {
            logger.error(
                "reconciliation schedule not updated", metadata: ["report_date": "\(day)", "error": "\(error)"]
            )
        }
    }

    private static func finish(
        _ connection: PostgresConnection, day: String, worker: String, runId: Int64?, error: String?, retry: Double
    ) throws -> Bool {
        try connection.query(
            "SELECT receipt_reconciliation_finish($1::date, $2, $3, $4, $5) AS held",
            [day, worker, runId.map { String($0) }, error, String(retry)]
        )[0, "held"] == "t"
    }
}

/// A report day another worker took over while this one fetched it: this worker's run is rolled back.
struct LeaseLost: Error, CustomStringConvertible {
    var day: String
    var description: String { "the reconciliation of \(day) was taken over by another worker (lease expired)" }
}

extension Worker {
    /// `work`'s reconciliation, when RECONCILE_AT is set; the first check 5 seconds after start (or one interval,
    /// when shorter).
    func reconciler() -> Reconciler? {
        guard let schedule = configuration.reconcile else { return nil }
        return Reconciler(
            schedule: schedule, workerId: configuration.workerId, databaseURL: databaseURL, logger: logger,
            firstCheck: Self.now() + min(schedule.checkEverySeconds, 5)
        )
    }
}
