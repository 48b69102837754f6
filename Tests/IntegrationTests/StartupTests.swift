#if os(Linux)
import Foundation
import Glibc
import PostgresClient
import ReceiptQueue
import Testing

/// What a new user meets first: `work`, `status` and `sweep` on a database without the schema, or with an older one,
/// say so and name `receipt-worker migrate` (exit 3); a database that refuses the connection for good (no such
/// database, an unknown role, one without LOGIN, TLS the server does not offer) ends `work` at start (exit 2) naming
/// the fix, while an outage is still waited for.
@Suite("receipt-worker at start: schema and connection refusals", .ownThread)
struct StartupTests {
    /// The environment `work` needs, against `url`.
    static func workEnvironment(_ url: String) -> [String: String] {
        ChildProcess.environment(setting: [
            "DATABASE_URL": url, "APPLE_SHARED_SECRET": "s", "APPLE_BUNDLE_IDS": "com.example.app",
            "APPLE_PRODUCTION_URL": "http://127.0.0.1:1/verifyReceipt",
            "APPLE_SANDBOX_URL": "http://127.0.0.1:1/sandbox/verifyReceipt", "LOG_FORMAT": "text",
        ])
    }

    static func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments, environment: environment)
        let status = child.wait(timeout: 60)
        return (status, child.output)
    }

    /// `url` connecting as `user` instead (URL or key=value form).
    static func url(_ url: String, user: String) -> String {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else { return url + " user='\(user)'" }
        return url + (url.contains("?") ? "&" : "?") + "user=\(user)"
    }

    static func url(_ url: String, setting: String) -> String {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else { return url + " " + setting }
        return url + (url.contains("?") ? "&" : "?") + setting
    }

    @Test("work, status and sweep on a database never migrated: exit 3, naming receipt-worker migrate")
    func noSchema() throws {
        let url = try TestServer.get().emptyDatabase()
        let work = try Self.run(["work"], environment: Self.workEnvironment(url))
        #expect(work.status == 3, "\(work.output)")
        #expect(work.output.contains("has no receipt-worker schema"), "\(work.output)")
        #expect(work.output.contains("receipt-worker migrate"), "\(work.output)")
        #expect(!work.output.contains("worker started"), "\(work.output)")
        #expect(!work.output.contains("does not exist (hint"), "\(work.output)")
        for command in ["status", "sweep"] {
            let result = try Self.run([command], environment: ChildProcess.environment(setting: ["DATABASE_URL": url]))
            #expect(result.status == 3, "\(command): \(result.output)")
            #expect(result.output.contains("Error: the database has no receipt-worker schema"), "\(command): \(result.output)")
            #expect(result.output.contains("receipt-worker migrate"), "\(command): \(result.output)")
        }
    }

    @Test("work and status on a database an older receipt-worker migrated: exit 3, naming the missing migration")
    func olderSchema() throws {
        let url = try TestServer.get().freshDatabase()
        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let last = try #require(migrator.migrations.last).name
        let connection = try PostgresConnection(url)
        defer { connection.close() }
        _ = try connection.query("DELETE FROM receipt_schema_migrations WHERE version = $1", [last])
        let work = try Self.run(["work"], environment: Self.workEnvironment(url))
        #expect(work.status == 3, "\(work.output)")
        #expect(work.output.contains("older than this receipt-worker"), "\(work.output)")
        #expect(work.output.contains(last), "\(work.output)")
        #expect(work.output.contains("receipt-worker migrate"), "\(work.output)")
        let status = try Self.run(["status"], environment: ChildProcess.environment(setting: ["DATABASE_URL": url]))
        #expect(status.status == 3, "\(status.output)")
        #expect(status.output.contains(last), "\(status.output)")
    }

    @Test("a current schema passes the check: work --drain on a migrated database exits 0")
    func currentSchema() throws {
        let url = try TestServer.get().freshDatabase()
        let work = try Self.run(["work", "--drain"], environment: Self.workEnvironment(url))
        #expect(work.status == 0, "\(work.output)")
        #expect(work.output.contains("worker started"), "\(work.output)")
    }

    @Test("work on a database that does not exist: exit 2 at start, saying how to create it")
    func databaseMissing() throws {
        let fresh = try TestServer.get().freshDatabase()
        let url = ConnectionString.replacingDatabase(in: fresh, with: "rw_nonexistent_\(getpid())")
        let work = try Self.run(["work"], environment: Self.workEnvironment(url))
        #expect(work.status == 2, "\(work.output)")
        #expect(work.output.contains("the database refused the connection (DATABASE_URL)"), "\(work.output)")
        #expect(work.output.contains("does not exist"), "\(work.output)")
        #expect(work.output.contains("CREATE DATABASE"), "\(work.output)")
        #expect(!work.output.contains("worker started"), "\(work.output)")
        let status = try Self.run(["status"], environment: ChildProcess.environment(setting: ["DATABASE_URL": url]))
        #expect(status.status == 2, "\(status.output)")
        #expect(status.output.contains("CREATE DATABASE"), "\(status.output)")
    }

    @Test("work as a role that does not exist, or may not log in: exit 2 at start, naming the role's fix")
    func authenticationFailed() throws {
        let fresh = try TestServer.get().freshDatabase()
        let admin = try PostgresConnection(fresh)
        defer { admin.close() }
        let noLogin = "rw_nologin_\(getpid())"
        _ = try admin.query("DROP ROLE IF EXISTS \(quoteIdentifier(noLogin))")
        _ = try admin.query("CREATE ROLE \(quoteIdentifier(noLogin)) NOLOGIN")
        defer { _ = try? admin.query("DROP ROLE IF EXISTS \(quoteIdentifier(noLogin))") }
        for user in ["rw_no_such_role_\(getpid())", noLogin] {
            let work = try Self.run(["work"], environment: Self.workEnvironment(Self.url(fresh, user: user)))
            #expect(work.status == 2, "\(user): \(work.output)")
            #expect(work.output.contains("the database refused the connection"), "\(user): \(work.output)")
            #expect(work.output.contains("LOGIN"), "\(user): \(work.output)")
            #expect(!work.output.contains("retrying"), "\(user): \(work.output)")
        }
    }

    @Test("work with sslmode=require against a server without TLS: exit 2 at start, naming sslmode")
    func tlsRequired() throws {
        let fresh = try TestServer.get().freshDatabase()
        let admin = try PostgresConnection(fresh)
        defer { admin.close() }
        guard try admin.query("SHOW ssl")[0, "ssl"] == "off" else { return }  // a TEST_DATABASE_URL server with TLS
        let work = try Self.run(["work"], environment: Self.workEnvironment(Self.url(fresh, setting: "sslmode=require")))
        #expect(work.status == 2, "\(work.output)")
        #expect(work.output.contains("sslmode"), "\(work.output)")
    }

    @Test("an outage is not a refusal: work on a port nobody listens on keeps waiting, and SIGTERM ends it with 0")
    func outageIsWaitedFor() throws {
        let port = try freePort()
        let child = try ChildProcess(
            ["work"], environment: Self.workEnvironment("postgresql://postgres@127.0.0.1:\(port)/none")
        )
        let line = child.waitForLine(containing: "database unavailable, retrying", timeout: 30)
        #expect(line != nil, "\(child.output)")
        // Text logs fold libpq's two-line message ("…Connection refused\n\tIs the server running…") into one line.
        #expect(line?.contains("Connection refused; Is the server running") == true, "\(line ?? child.output)")
        #expect(!(line ?? "").contains("\\n"), "\(line ?? "")")
        Thread.sleep(forTimeInterval: 1)
        #expect(child.wait(timeout: 0) == nil, "work exited during an outage: \(child.output)")
        child.signal(SIGTERM)
        #expect(child.wait(timeout: 10) == 0, "\(child.output)")
    }

    @Test("refusals are told from outages by libpq's and the server's messages")
    func classification() {
        let refused: [(String, ConnectionRefusal)] = [
            (
                "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database \"nonexistent\" does not exist",
                .databaseMissing
            ),
            (
                "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL:  password authentication failed for user \"app\"",
                .authenticationFailed
            ),
            ("connection to server at \"db\", port 5432 failed: fe_sendauth: no password supplied", .authenticationFailed),
            ("connection to server on socket \"/run/x\" failed: FATAL:  role \"app\" does not exist", .authenticationFailed),
            (
                "connection to server at \"db\", port 5432 failed: FATAL:  no pg_hba.conf entry for host \"10.0.0.2\", "
                    + "user \"app\", database \"app\", no encryption",
                .notPermitted
            ),
            ("connection to server at \"db\", port 5432 failed: server does not support SSL, but SSL was required", .tlsFailed),
            ("FATAL:  permission denied for database \"app\"\nDETAIL:  User does not have CONNECT privilege.", .noConnectPrivilege),
        ]
        for (message, expected) in refused {
            #expect(ConnectionRefusal(message: message) == expected, "\(message)")
        }
        let outages = [
            "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?",
            "connection to server at \"db\", port 5432 failed: FATAL:  the database system is starting up",
            "connection to server at \"db\", port 5432 failed: FATAL:  the database system is shutting down",
            "connection to server at \"db\", port 5432 failed: FATAL:  sorry, too many clients already",
            "could not translate host name \"db\" to address: Temporary failure in name resolution",
            "connection to server at \"db\", port 5432 failed: timeout expired",
        ]
        for message in outages {
            #expect(ConnectionRefusal(message: message) == nil, "\(message)")
        }
        #expect(PostgresError(kind: .queryFailed, message: "database \"x\" does not exist").refusal == nil)
    }
}
#endif
