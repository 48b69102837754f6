import Foundation
import LocalPostgres
import PostgresClient
import Synchronization

/// The server the integration tests use: `TEST_DATABASE_URL` if set (a scratch database is created in it and
/// dropped at exit), else a temporary cluster started once for the whole test run (stopped at exit).
/// Either way a failure to get one fails the tests that need it; nothing is skipped.
enum TestDatabase {
    static let url: Result<String, any Error> = Result { try makeScratchDatabase() }

    static func connect() throws -> PostgresConnection {
        try PostgresConnection(url.get())
    }

    /// A name no other test run uses, for tables and channels shared between connections.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The server URL and database name to drop at exit, when using `TEST_DATABASE_URL`.
    private static let scratch = Mutex<(server: String, database: String)?>(nil)

    private static func makeScratchDatabase() throws -> String {
        let database = uniqueName("postgres_client_tests")
        guard let server = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"], !server.isEmpty else {
            return try LocalPostgresCluster.start().createDatabase(database)
        }
        let admin = try PostgresConnection(server)
        try admin.execute("CREATE DATABASE \(quoteIdentifier(database)) ENCODING 'UTF8' TEMPLATE template0")
        scratch.withLock { $0 = (server, database) }
        atexit { TestDatabase.dropScratchDatabase() }
        return ConnectionString.replacingDatabase(in: server, with: database)
    }

    private static func dropScratchDatabase() {
        guard let (server, database) = scratch.withLock({ $0 }) else { return }
        let admin = try? PostgresConnection(server)
        try? admin?.execute("DROP DATABASE IF EXISTS \(quoteIdentifier(database)) WITH (FORCE)")
    }
}
