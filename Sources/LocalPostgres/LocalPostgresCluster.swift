import Foundation
import PostgresClient
import Synchronization

/// A temporary PostgreSQL server for the demo, the benchmark and the tests: its own cluster in a fresh temporary
/// directory, listening on 127.0.0.1 with trust authentication, deleted again by ``stop()``.
///
/// Requires the server binaries (`initdb`, `pg_ctl`); when the process runs as root, the server runs as the
/// `postgres` OS user. Every started cluster is stopped when the process exits normally.
public final class LocalPostgresCluster: Sendable {
    /// The TCP port on 127.0.0.1; it stays the same across ``restart(mode:)``.
    public let port: Int
    let server: ServerControl
    private let state = Mutex(State.running)

    private enum State {
        case running
        case serverStopped
        case removed
    }

    init(port: Int, server: ServerControl) {
        self.port = port
        self.server = server
    }

    /// Connects as the superuser `postgres` to the `postgres` database.
    public var url: String { url(database: "postgres") }

    /// The cluster's data directory (inside its temporary directory).
    public var dataDirectory: String { server.dataDirectory }

    /// Connects as `postgres` to `database`.
    public func url(database: String) -> String {
        ConnectionString.replacingDatabase(in: "postgresql://postgres@127.0.0.1:\(port)", with: database)
    }

    /// Creates an initialized cluster in a new temporary directory and starts its server on a free port.
    public static func start(options: Options = .init()) throws -> LocalPostgresCluster {
        let binaries = try PostgresBinaries.locate()
        let baseDirectory = try makeTemporaryDirectory()
        do {
            let runner = try CommandRunner(workingDirectory: baseDirectory)
            try runner.handOver(baseDirectory)
            let server = ServerControl(
                binaries: binaries,
                runner: runner,
                baseDirectory: baseDirectory,
                options: options
            )
            try server.initialize()
            let cluster = LocalPostgresCluster(port: try startOnFreePort(server), server: server)
            register(cluster)
            return cluster
        } catch {
            try? FileManager.default.removeItem(atPath: baseDirectory)
            throw error
        }
    }

    /// Creates the database `name` and returns its URL.
    public func createDatabase(_ name: String) throws -> String {
        let connection = try PostgresConnection(url)
        try connection.execute("CREATE DATABASE \(quoteIdentifier(name))")
        return url(database: name)
    }

    /// Stops the server (fast shutdown, immediate if that fails) and deletes the temporary directory.
    /// Calling it again does nothing.
    public func stop() {
        state.withLock { state in
            if state == .running, (try? server.stop(mode: "fast")) == nil {
                try? server.stop(mode: "immediate")
            }
            if state != .removed {
                try? FileManager.default.removeItem(atPath: server.baseDirectory)
            }
            state = .removed
        }
        Self.unregister(self)
    }

    /// Stops the server with `mode` (`immediate` simulates a crash) and starts it again on the same port.
    public func restart(mode: String = "immediate") throws {
        try stopServer(mode: mode)
        try startServer()
    }

    /// Stops the server with `mode`: `smart`, `fast` or `immediate`. Does nothing if it is already stopped.
    public func stopServer(mode: String) throws {
        guard ["smart", "fast", "immediate"].contains(mode) else {
            throw LocalPostgresError(
                code: .commandFailed,
                message: "unknown shutdown mode \(mode): use smart, fast or immediate"
            )
        }
        try state.withLock { state in
            switch state {
            case .removed:
                throw Self.removedError
            case .serverStopped:
                return
            case .running:
                try server.stop(mode: mode)
                state = .serverStopped
            }
        }
    }

    /// Starts the server again on the same port after ``stopServer(mode:)``. Does nothing if it is running.
    public func startServer() throws {
        try state.withLock { state in
            switch state {
            case .removed:
                throw Self.removedError
            case .running:
                return
            case .serverStopped:
                try server.start(port: port)
                state = .running
            }
        }
    }

    private static let removedError = LocalPostgresError(
        code: .clusterRemoved,
        message: "the cluster was stopped and its directory deleted"
    )

    /// Starts the server on a free port, trying another port if that fails (another process may take a port
    /// between the check and the server binding it).
    static func startOnFreePort(_ server: ServerControl) throws -> Int {
        var lastError: any Error = LocalPostgresError(code: .startFailed, message: "no start attempted")
        for _ in 1...5 {
            let port = try findFreePort()
            do {
                try server.start(port: port)
                return port
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    static func makeTemporaryDirectory() throws -> String {
        let template = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("local-postgres.XXXXXX")
        var path = Array(template.path.utf8CString)
        let created = path.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        guard created else {
            throw LocalPostgresError(code: .setupFailed, message: "mkdtemp \(template.path) failed: errno \(errno)")
        }
        return String(decoding: path.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
