import Foundation
import PostgresClient
import Synchronization

/// Samples how many connections the database has open (pg_stat_activity for the current database) on its own
/// thread and connection, and keeps the maxima: all connections, and those not opened by the benchmark itself.
final class ConnectionSampler: Sendable {
    struct Maxima: Sendable {
        /// Connections other than the benchmark's own (application_name receipt-bench): the worker's.
        var worker = 0
        /// Every connection to the database, the benchmark's own included.
        var all = 0
        var samples = 0
    }

    private let maxima = Mutex(Maxima())
    private let running = Mutex(true)
    private let done = DispatchSemaphore(value: 0)

    /// Starts sampling every `interval` seconds through a connection to `url`.
    init(url: String, interval: Double) throws {
        let box = HandOver(try BenchConnection.open(url))
        let thread = Thread { [self] in
            let connection = box.value
            defer {
                connection.close()
                done.signal()
            }
            while running.withLock({ $0 }) {
                if let counts = try? connection.query(
                    """
                    SELECT count(*) FILTER (WHERE application_name IS DISTINCT FROM 'receipt-bench') AS worker,
                           count(*) AS all
                    FROM pg_stat_activity WHERE datname = current_database()
                    """
                ) {
                    let worker = Int(counts.int64(0, "worker") ?? 0)
                    let all = Int(counts.int64(0, "all") ?? 0)
                    maxima.withLock {
                        $0.worker = max($0.worker, worker)
                        $0.all = max($0.all, all)
                        $0.samples += 1
                    }
                }
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.name = "bench-connections"
        thread.start()
    }

    /// Stops sampling and returns the maxima.
    func stop() -> Maxima {
        let wasRunning = running.withLock { running in
            defer { running = false }
            return running
        }
        if wasRunning { done.wait() }
        return maxima.withLock { $0 }
    }
}

/// Moves a non-Sendable value to the one thread that uses it from then on.
/// `@unchecked Sendable`: the creating thread never touches `value` after handing the box over.
final class HandOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
