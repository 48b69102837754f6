#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

extension LocalPostgresCluster {
    /// Every cluster started and not yet stopped.
    private static let started = Mutex<[LocalPostgresCluster]>([])

    /// Stops every cluster this process started and has not stopped yet. Installed with `atexit` by the first
    /// `start`, so a process that exits normally leaves no server behind (a crash or a signal still can: call
    /// this from your signal handling).
    public static func stopAllStarted() {
        let clusters = started.withLock { clusters in
            defer { clusters.removeAll() }
            return clusters
        }
        for cluster in clusters {
            cluster.stop()
        }
    }

    static func register(_ cluster: LocalPostgresCluster) {
        _ = exitHandlerInstalled
        started.withLock { $0.append(cluster) }
    }

    static func unregister(_ cluster: LocalPostgresCluster) {
        started.withLock { clusters in clusters.removeAll { $0 === cluster } }
    }

    /// Runs once, on first use.
    private static let exitHandlerInstalled: Void = {
        atexit { LocalPostgresCluster.stopAllStarted() }
    }()
}
