import Foundation
import Logging
import PostgresClient
import ReceiptQueue

/// One loop's database connection: opened lazily, replaced after the server goes away, with a growing pause
/// between tries, so a database that is down or restarting makes the worker wait instead of crash.
/// Calls are serialised by a lock, so loops that each make a few short calls (maintenance and notifications) may
/// share one connection. `@unchecked Sendable`: the mutable state is touched only under `lock`.
/// A connection the server refuses for good (`PostgresError.refusal`: no such database, authentication failed) is
/// logged as an error naming the fix; it is retried like an outage (a password being rotated) unless `stopOnRefusal`.
public final class DatabaseSession: @unchecked Sendable {
    private let lock = NSLock()
    let url: String
    let name: String
    let logger: Logger
    /// LISTENed on every new connection.
    let channels: [String]
    /// Whether `perform` returns a refusal as a failure at once instead of retrying (start-up).
    let stopOnRefusal: Bool
    private(set) var store: JobStore?
    private var failures = 0
    /// After a connection failure: no new attempt before this time (the backoff), whoever asks.
    private var retryAt: Date?

    public init(url: String, name: String, logger: Logger, channels: [String] = [], stopOnRefusal: Bool = false) {
        self.url = url
        self.name = name
        self.logger = logger
        self.channels = channels
        self.stopOnRefusal = stopOnRefusal
    }

    /// Runs `body` with a live connection. Connection problems are retried (with backoff) until `giveUp` says
    /// stop, and nil is returned; other errors are returned to the caller. The backoff holds across calls: a caller
    /// that gives up at once (the maintenance loop) gets nil without a new attempt until the pause is over, so the
    /// connection is tried, and the failure logged, once per pause.
    public func perform<T>(giveUp: () -> Bool, _ body: (JobStore) throws -> T) -> Result<T, any Error>? {
        lock.lock()
        defer { lock.unlock() }
        while true {
            // Paused in slices, so a shutdown during the pause is seen within 50 ms.
            while let resume = retryAt, Date() < resume {
                if giveUp() { return nil }
                Thread.sleep(forTimeInterval: min(0.05, max(0, resume.timeIntervalSinceNow)))
            }
            do {
                let store = try connected()
                let value = try body(store)
                retryAt = nil
                if failures > 0 {
                    logger.notice("database reachable again", metadata: ["connection": "\(name)"])
                    failures = 0
                }
                return .success(value)
            } catch let error as PostgresError where error.isConnectionProblem {
                store = nil
                if stopOnRefusal, error.refusal != nil { return .failure(error) }
                failures += 1
                let pause = min(0.1 * pow(2, Double(min(failures, 8))), 5)
                if let refusal = error.refusal {
                    logger.error(
                        "database refused the connection, retrying",
                        metadata: [
                            "connection": "\(name)", "error": "\(error)", "fix": "\(refusal.fix)",
                            "retry_in_s": "\(pause)",
                        ]
                    )
                } else {
                    logger.warning(
                        "database unavailable, retrying",
                        metadata: ["connection": "\(name)", "error": "\(error)", "retry_in_s": "\(pause)"]
                    )
                }
                retryAt = Date(timeIntervalSinceNow: pause)
                if giveUp() { return nil }
            } catch {
                return .failure(error)
            }
        }
    }

    private func connected() throws -> JobStore {
        if let store {
            if store.connection.isHealthy { return store }
            // libpq gave up on it after a failure seen between calls (a server restart, a terminated backend).
            logger.warning("database connection lost, reconnecting", metadata: ["connection": "\(name)"])
            store.connection.close()
            self.store = nil
        }
        let connection = try PostgresConnection(url)
        for channel in channels { try connection.listen(channel) }
        let fresh = JobStore(connection: connection)
        store = fresh
        return fresh
    }

    public func close() {
        lock.lock()
        defer { lock.unlock() }
        store?.connection.close()
        store = nil
    }
}
