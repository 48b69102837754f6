import Foundation
import LocalPostgres
import PostgresClient
import Testing

/// Crashes and stops a server of its own, so the shared test database is never disturbed.
@Suite("Server restarts and outages", .serialized)
struct ServerOutageTests {
    /// Durable (`fsync: true`): with the default `synchronous_commit=off`, a crash may lose the last commits.
    static let cluster = Result {
        try LocalPostgresCluster.start(
            options: .init(fsync: true, maxConnections: 20, extraSettings: ["cluster_name": "it's \"local\" $HOME"])
        )
    }

    @Test("the cluster applies its options")
    func options() throws {
        let connection = try PostgresConnection(try Self.cluster.get().url)
        #expect(try connection.query("SHOW max_connections")[0, "max_connections"] == "20")
        #expect(try connection.query("SHOW synchronous_commit")[0, "synchronous_commit"] == "on")
        #expect(try connection.query("SHOW cluster_name")[0, "cluster_name"] == "it's \"local\" $HOME")
        #expect(try connection.query("SHOW listen_addresses")[0, "listen_addresses"] == "127.0.0.1")
    }

    @Test("after an immediate restart (a crash) reconnect works and committed data is there")
    func immediateRestart() throws {
        let cluster = try Self.cluster.get()
        let connection = try PostgresConnection(cluster.url)
        try connection.execute("CREATE TABLE IF NOT EXISTS survivors (v text); INSERT INTO survivors VALUES ('kept')")
        try cluster.restart(mode: "immediate")

        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error.isConnectionProblem)
        try connection.reconnect()
        #expect(try connection.query("SELECT v FROM survivors").rows.contains(["kept"]))
    }

    @Test("while the server is down reconnect fails fast; once it is back reconnect works")
    func downForAWhile() throws {
        let cluster = try Self.cluster.get()
        let connection = try PostgresConnection(cluster.url)
        try connection.prepare("answer", "SELECT 42 AS n")
        try cluster.stopServer(mode: "fast")
        try cluster.stopServer(mode: "fast")

        let lost = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(lost.isConnectionProblem)
        let refused = try #require(throws: PostgresError.self) { try connection.reconnect() }
        #expect(refused.kind == .connectionFailed)
        #expect(!connection.isHealthy)
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }

        try cluster.startServer()
        try connection.reconnect()
        #expect(connection.isHealthy)
        #expect(try connection.executePrepared("answer").int64(0, "n") == 42)
        #expect(throws: LocalPostgresError.self) { try cluster.stopServer(mode: "sideways") }
    }

    @Test("stop shuts the server down, deletes the directory, and can be repeated")
    func stop() throws {
        let cluster = try LocalPostgresCluster.start(options: .init(maxConnections: 10))
        let connection = try PostgresConnection(cluster.url)
        let directory = cluster.dataDirectory
        #expect(FileManager.default.fileExists(atPath: directory + "/PG_VERSION"))
        let database = try cluster.createDatabase("a db with spaces")
        #expect(try PostgresConnection(database).query("SELECT current_database() AS d")[0, "d"] == "a db with spaces")

        cluster.stop()
        cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(throws: PostgresError.self) { try PostgresConnection(cluster.url) }
        let removed = try #require(throws: LocalPostgresError.self) { try cluster.startServer() }
        #expect(removed.code == .clusterRemoved)
    }
}
