import AppStoreClient
import AppStoreSignedData
import Dispatch
import Foundation
import Logging
import PostgresClient
import ReceiptQueue
import ReceiptRules
import ThreadSupport

/// A worker process's engine. Three loops on threads of their own, each with its own connection:
/// - claim: takes runnable jobs (one statement, SKIP LOCKED) while there is room under MAX_IN_FLIGHT, and
///   starts their Apple calls on the shared libcurl multi handle; sleeps on LISTEN receipt_jobs when idle;
/// - write: writes outcomes in batches, each guarded by its lease, ledger and job in one transaction;
/// - maintenance: renews the leases of jobs in hand, runs the scheduler, notices when a drain is complete.
/// No transaction is open while Apple answers; database connections do not grow with calls in flight.
public final class Worker: Sendable {
    public let configuration: WorkerConfiguration
    let databaseURL: String
    /// verifyReceipt; nil where receipts are read through the App Store Server API only.
    let client: AppStoreClient?
    /// Verifies StoreKit 2 signed transactions; nil where they are not verified (such jobs then wait, costing no
    /// attempt, for a worker that verifies them).
    let signedData: SignedDataVerifier?
    /// The App Store Server API, when credentials are configured: transaction ids, confirmations, receipts read
    /// through it.
    let serverAPI: ServerAPIClient?
    /// Where signed transactions are verified: off the claim loop, several at once.
    let verification = DispatchQueue(label: "receipt-worker.signed-data", attributes: .concurrent)
    /// Where the calls of a claimed batch are started during a burst of claims (request bodies built, handed to the
    /// transport): the claim loop sends its next claim meanwhile, so the claims and the calls' start overlap.
    let starts = DispatchQueue(label: "receipt-worker.call-starts")
    /// Where refund requests are answered (Worker+Maintenance): off the maintenance loop, one pass at a time.
    let refundRequests = DispatchQueue(label: "receipt-worker.refund-requests")
    let refundPass = DispatchGroup()
    let logger: Logger
    let decider: OutcomeDecider
    let breaker: CircuitBreaker
    let state = WorkerState()
    let events: WorkerEvents

    public init(
        configuration: WorkerConfiguration,
        databaseURL: String,
        client: AppStoreClient?,
        signedData: SignedDataVerifier? = nil,
        serverAPI: ServerAPIClient? = nil,
        logger: Logger,
        events: WorkerEvents = WorkerEvents()
    ) {
        self.configuration = configuration
        self.databaseURL = databaseURL
        self.client = client
        self.signedData = signedData
        self.serverAPI = serverAPI
        self.logger = logger
        self.events = events
        self.decider = OutcomeDecider(rules: configuration.rules, retry: configuration.retry)
        self.breaker = CircuitBreaker(configuration: configuration.breaker)
    }

    /// Runs until `shutdown()` (or, with `drain`, until every job is final). Throws only for a connection string
    /// that cannot work, or a thread that cannot start; an unreachable database is waited for (with backoff, a
    /// shutdown ending the wait), and the loops start, and "worker started" is logged, once it answered.
    public func run() throws {
        do {
            _ = try PostgresConnection(databaseURL)
        } catch let error as PostgresError where !error.isConnectionProblem {
            throw error
        } catch {
            logger.warning("database not reachable yet; waiting for it", metadata: ["error": "\(error)"])
            let startUp = DatabaseSession(url: databaseURL, name: "start-up", logger: logger)
            defer { startUp.close() }
            switch startUp.perform(giveUp: { state.isStopping }, { _ in () }) {
            case .success:
                break
            case .failure(let error):
                throw error
            case nil:
                logger.info(
                    "worker stopped before the database was reached", metadata: ["worker": "\(configuration.workerId)"]
                )
                return
            }
        }
        logger.info(
            "worker started",
            metadata: [
                "worker": "\(configuration.workerId)", "max_in_flight": "\(configuration.maxInFlight)",
                "lease_s": "\(configuration.leaseSeconds)", "scheduler": "\(configuration.runScheduler)",
                "drain": "\(configuration.drain)",
            ]
        )
        var threads: [DedicatedThread] = []
        // The maintenance and notification loops share a connection: a quiet worker holds 3. Overflow writers
        // (WRITE_CONNECTIONS) connect only while a backlog of verdicts waits.
        let maintenance = DatabaseSession(url: databaseURL, name: "maintenance", logger: logger)
        defer { maintenance.close() }
        do {
            var loops: [(String, @Sendable () -> Void)] = [
                ("claim", claimLoop), ("write", writeLoop), ("maintenance", { self.maintenanceLoop(maintenance) }),
            ]
            for index in 1..<max(1, configuration.writeConnections) {
                loops.append(("write-\(index + 1)", { self.overflowWriteLoop(index) }))
            }
            if signedData != nil { loops.append(("notifications", { self.notificationLoop(maintenance) })) }
            for (name, loop) in loops {
                threads.append(try DedicatedThread.start(name: name, loop))
            }
        } catch {
            shutdown()
            for thread in threads { thread.join() }
            throw error
        }
        for thread in threads { thread.join() }
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

    /// The jobs this worker holds now: what it would abandon to their leases if it exited at once.
    public var heldJobs: JobsInHand { state.inHand }

    /// Seconds on a monotonic clock (the circuit breaker's time).
    static func now() -> Double {
        (ContinuousClock.now - processStart).seconds
    }
}

private let processStart = ContinuousClock.now
