import AppStoreClient
import Dispatch
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules

/// A worker process's engine. Three loops on their own Dispatch queues, each with its own connection:
/// - claim: takes runnable jobs (one statement, SKIP LOCKED) while there is room under MAX_IN_FLIGHT, and
///   starts their Apple calls on the shared libcurl multi handle; sleeps on LISTEN receipt_jobs when idle;
/// - write: writes outcomes in batches, each guarded by its lease, ledger and job in one transaction;
/// - maintenance: renews the leases of jobs in hand, runs the scheduler, notices when a drain is complete.
/// No transaction is open while Apple answers; database connections do not grow with calls in flight.
public final class Worker: Sendable {
    public let configuration: WorkerConfiguration
    let databaseURL: String
    let client: AppStoreClient
    let logger: Logger
    let decider: OutcomeDecider
    let breaker: CircuitBreaker
    let state = WorkerState()
    let events: WorkerEvents

    public init(
        configuration: WorkerConfiguration,
        databaseURL: String,
        client: AppStoreClient,
        logger: Logger,
        events: WorkerEvents = WorkerEvents()
    ) {
        self.configuration = configuration
        self.databaseURL = databaseURL
        self.client = client
        self.logger = logger
        self.events = events
        self.decider = OutcomeDecider(rules: configuration.rules, retry: configuration.retry)
        self.breaker = CircuitBreaker(configuration: configuration.breaker)
    }

    /// Runs until `shutdown()` (or, with `drain`, until every job is final). Throws only for a connection string
    /// that cannot work; an unreachable database is waited for.
    public func run() throws {
        do {
            _ = try PostgresConnection(databaseURL)
        } catch let error as PostgresError where !error.isConnectionProblem {
            throw error
        } catch {
            logger.warning("database not reachable yet; waiting for it", metadata: ["error": "\(error)"])
        }
        logger.info(
            "worker started",
            metadata: [
                "worker": "\(configuration.workerId)", "max_in_flight": "\(configuration.maxInFlight)",
                "lease_s": "\(configuration.leaseSeconds)", "scheduler": "\(configuration.runScheduler)",
                "drain": "\(configuration.drain)",
            ]
        )
        let group = DispatchGroup()
        for (label, loop) in [("claim", claimLoop), ("write", writeLoop), ("maintenance", maintenanceLoop)] {
            DispatchQueue(label: "receipt-worker.\(label)").async(group: group) { loop() }
        }
        group.wait()
        logger.info("worker stopped", metadata: ["worker": "\(configuration.workerId)"])
    }

    /// Begins a graceful stop: no more claims; calls in flight get `shutdownGraceSeconds` to finish and be
    /// written, then their jobs are given back to the queue. Safe from any thread, any number of times.
    public func shutdown() {
        if !state.isStopping {
            logger.notice("stopping: no new claims", metadata: ["in_hand": "\(state.heldCount)"])
        }
        state.stop(grace: configuration.shutdownGraceSeconds)
    }

    /// Seconds on a monotonic clock (the circuit breaker's time).
    static func now() -> Double {
        (ContinuousClock.now - processStart).seconds
    }
}

private let processStart = ContinuousClock.now

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
