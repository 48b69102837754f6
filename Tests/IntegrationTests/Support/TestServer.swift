import AppleFixtureFiles
import Foundation
import LocalPostgres
import PostgresClient
import ReceiptQueue
import Synchronization

/// The PostgreSQL server the integration tests use: `TEST_DATABASE_URL` if set, else a temporary cluster this
/// process starts (as the `postgres` OS user when run as root) and stops at exit. Each test gets a fresh database
/// copied from a migrated template.
final class TestServer: Sendable {
    static let bundleIds = ["com.example.app", "com.example.other"]

    private let serverURL: String
    private let cluster: LocalPostgresCluster?
    private let template: String
    private let counter = Mutex(0)

    static let shared: Result<TestServer, any Error> = Result { try TestServer() }

    static func get() throws -> TestServer { try shared.get() }

    private init() throws {
        if let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"], !url.isEmpty {
            serverURL = url
            cluster = nil
        } else {
            let started = try LocalPostgresCluster.start()
            serverURL = started.url
            cluster = started
        }
        template = "rw_template_\(getpid())"
        let admin = try PostgresConnection(serverURL)
        defer { admin.close() }
        _ = try admin.query("DROP DATABASE IF EXISTS \(quoteIdentifier(template))")
        _ = try admin.query("CREATE DATABASE \(quoteIdentifier(template))")
        let connection = try PostgresConnection(ConnectionString.replacingDatabase(in: serverURL, with: template))
        defer { connection.close() }
        try Migrator(directory: Self.sqlDirectory).migrate(connection)
        try JobStore(connection: connection).registerApps(Self.bundleIds)
    }

    /// A new database with the schema applied; returns its URL.
    func freshDatabase() throws -> String {
        let name = counter.withLock { count -> String in
            count += 1
            return "rw_test_\(getpid())_\(count)"
        }
        let admin = try PostgresConnection(serverURL)
        defer { admin.close() }
        _ = try admin.query("CREATE DATABASE \(quoteIdentifier(name)) TEMPLATE \(quoteIdentifier(template))")
        return ConnectionString.replacingDatabase(in: serverURL, with: name)
    }

    /// A new database with nothing in it (not even the schema); returns its URL.
    func emptyDatabase() throws -> String {
        let name = counter.withLock { count -> String in
            count += 1
            return "rw_empty_\(getpid())_\(count)"
        }
        let admin = try PostgresConnection(serverURL)
        defer { admin.close() }
        _ = try admin.query("CREATE DATABASE \(quoteIdentifier(name)) TEMPLATE template0")
        return ConnectionString.replacingDatabase(in: serverURL, with: name)
    }

    var restartable: LocalPostgresCluster? { cluster }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    static var sqlDirectory: String { repositoryRoot.appendingPathComponent("sql").path }

    /// ../shared/fixtures/apple beside the repository.
    static func fixture(_ name: String) throws -> String { try AppleFixtureFiles.text(name) }
}

struct TestSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
