import PostgresClient
import ThreadSupport

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

    private struct Samples {
        var maxima = Maxima()
        var stopped = false
    }

    private let samples = ConditionLock(Samples())
    private let thread: DedicatedThread

    /// Starts sampling every `interval` seconds through a connection to `url`.
    init(url: String, interval: Double) throws {
        let connection = try BenchConnection.open(url)
        thread = try DedicatedThread.start(name: "bench-connections") { [samples] in
            defer { connection.close() }
            repeat {
                if let counts = try? connection.query(
                    """
                    SELECT count(*) FILTER (WHERE application_name IS DISTINCT FROM 'receipt-bench') AS worker,
                           count(*) AS all
                    FROM pg_stat_activity WHERE datname = current_database()
                    """
                ) {
                    let worker = Int(counts.int64(0, "worker") ?? 0)
                    let all = Int(counts.int64(0, "all") ?? 0)
                    samples.withLock {
                        $0.maxima.worker = max($0.maxima.worker, worker)
                        $0.maxima.all = max($0.maxima.all, all)
                        $0.maxima.samples += 1
                    }
                }
            } while !samples.wait(until: \.stopped, timeout: .seconds(interval))
        }
    }

    /// Stops sampling and returns the maxima.
    func stop() -> Maxima {
        let wasRunning = samples.withLock { samples in
            defer { samples.stopped = true }
            return !samples.stopped
        }
        if wasRunning { thread.join() }
        return samples.withLock { $0.maxima }
    }
}
