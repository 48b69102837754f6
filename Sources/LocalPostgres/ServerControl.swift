import Foundation

/// The commands that set up, start and stop the server of one cluster directory.
struct ServerControl: Sendable {
    let binaries: PostgresBinaries
    let runner: CommandRunner
    /// The temporary directory holding everything: `data/`, the server log and the Unix socket.
    let baseDirectory: String
    let options: LocalPostgresCluster.Options

    var dataDirectory: String { baseDirectory + "/data" }
    var logFile: String { baseDirectory + "/postgres.log" }

    /// Creates the cluster: trust authentication, superuser `postgres`, UTF-8, C locale, no fsync of the files.
    func initialize() throws {
        try runner.run(
            binaries.initdb,
            ["-D", dataDirectory, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]
        )
    }

    /// Starts the server on `port` and waits until it accepts connections.
    func start(port: Int) throws {
        do {
            try runner.run(
                binaries.pgCtl,
                ["start", "-w", "-D", dataDirectory, "-l", logFile, "-o", serverOptions(port: port)]
            )
        } catch {
            // pg_ctl may give up on a server that is still starting: make sure none is left behind.
            try? stop(mode: "immediate")
            throw LocalPostgresError(
                code: .startFailed,
                message: "PostgreSQL did not start on port \(port): \(error)\nEnd of \(logFile):\n\(logTail())"
            )
        }
    }

    /// Stops the server (`smart`, `fast` or `immediate`) and waits until it has exited.
    func stop(mode: String) throws {
        try runner.run(binaries.pgCtl, ["stop", "-w", "-D", dataDirectory, "-m", mode])
    }

    /// The `postgres` command-line options. pg_ctl hands them to `/bin/sh`, so each value is shell-quoted.
    func serverOptions(port: Int) -> String {
        var settings = [
            ("listen_addresses", "127.0.0.1"),
            ("unix_socket_directories", baseDirectory),
            ("max_connections", String(options.maxConnections)),
        ]
        if !options.fsync {
            settings += [
                ("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off"), ("wal_init_zero", "off"),
            ]
        }
        settings += options.extraSettings.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return (["-p \(port)"] + settings.map { "-c " + shellQuoted("\($0)=\($1)") }).joined(separator: " ")
    }

    /// The last lines of the server log, to explain a failed start.
    func logTail(lines: Int = 30) -> String {
        guard let log = try? String(contentsOfFile: logFile, encoding: .utf8) else { return "(no server log)" }
        return log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// `text` as one single-quoted `sh` word.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
