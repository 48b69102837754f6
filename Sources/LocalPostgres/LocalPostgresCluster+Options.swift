extension LocalPostgresCluster {
    /// How the temporary server is configured.
    public struct Options: Sendable {
        /// Whether the server makes its writes durable (`fsync`, `synchronous_commit`, `full_page_writes`; `wal_init_zero` too, which only zero-fills new WAL files).
        /// Off by default: a throwaway cluster need not survive a power cut, and it is much faster without.
        /// Note that with `synchronous_commit=off` a crash (``LocalPostgresCluster/restart(mode:)`` with
        /// `immediate`) may lose the commits of its last fraction of a second: crash tests that check committed
        /// data survives need `true`.
        public var fsync: Bool
        /// `max_connections`: enough for many workers plus the tests' own connections.
        public var maxConnections: Int
        /// Further server settings, passed as `-c name=value` (e.g. `["log_min_duration_statement": "0"]`).
        public var extraSettings: [String: String]

        public init(fsync: Bool = false, maxConnections: Int = 200, extraSettings: [String: String] = [:]) {
            self.fsync = fsync
            self.maxConnections = maxConnections
            self.extraSettings = extraSettings
        }
    }
}
