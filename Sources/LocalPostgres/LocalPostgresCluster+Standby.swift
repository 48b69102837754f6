import Foundation

extension LocalPostgresCluster {
    /// Starts a streaming standby of this cluster in a temporary directory of its own, on a free port: a copy made
    /// with `pg_basebackup -R` (WAL streamed during the copy, `standby.signal` and `primary_conninfo` written), started
    /// with this cluster's options. It answers read-only queries until ``promote()``; stop it with ``stop()``.
    /// To make it synchronous, set `synchronous_standby_names` on this cluster afterwards (the copy would otherwise
    /// carry the setting, and a promoted standby would wait for a standby of its own).
    public func startStandby() throws -> LocalPostgresCluster {
        let baseDirectory = try Self.makeTemporaryDirectory()
        do {
            let runner = try CommandRunner(workingDirectory: baseDirectory)
            try runner.handOver(baseDirectory)
            let standby = ServerControl(
                binaries: server.binaries, runner: runner, baseDirectory: baseDirectory, options: server.options
            )
            try runner.run(
                server.binaries.pgBasebackup,
                [
                    "-D", standby.dataDirectory, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
                    "-h", "127.0.0.1", "-p", String(port), "-U", "postgres",
                ]
            )
            let cluster = LocalPostgresCluster(port: try Self.startOnFreePort(standby), server: standby)
            Self.register(cluster)
            return cluster
        } catch {
            try? FileManager.default.removeItem(atPath: baseDirectory)
            throw error
        }
    }

    /// Ends recovery on a standby (`pg_ctl promote`) and waits until it accepts writes.
    public func promote() throws {
        try server.runner.run(server.binaries.pgCtl, ["promote", "-w", "-D", server.dataDirectory])
    }
}
