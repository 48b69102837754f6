import Foundation
@testable import LocalPostgres
import PostgresClient
import Testing

@Suite("Connection failures and reconnect")
struct ConnectionFailureTests {
    @Test(
        "a malformed connection string is reported as such, without its password",
        arguments: [
            "this is not a connection string",
            "postgresql://worker:sekret@127.0.0.1:5432/db?no_such_option=1",
            "host=127.0.0.1 password=sekret no_such_option=1",
            "postgresql://worker:sekret@[::1/db",
            "postgresql://worker:s%65kret@[::1/db",
            "postgresql://[::1/db?user=worker&password=sekret",
            "host=[::1 password = 'sek\\'ret' bogus",
        ]
    )
    func badConnectionString(_ connectionString: String) throws {
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(connectionString) }
        #expect(error.kind == .badConnectionString)
        #expect(!error.message.isEmpty)
        #expect(!error.description.contains("sekret"))
        #expect(!error.description.contains("s%65kret"))
        #expect(!error.description.contains("sek\\'ret"))
        #expect(!error.isConnectionProblem)
    }

    @Test("a port nobody listens on fails fast with connectionFailed, without the password")
    func connectionRefused() throws {
        let port = try findFreePort()
        let clock = ContinuousClock()
        var caught: PostgresError?
        let elapsed = clock.measure {
            do {
                _ = try PostgresConnection("postgresql://worker:sekret@127.0.0.1:\(port)/postgres?connect_timeout=120")
            } catch {
                caught = error as? PostgresError
            }
        }
        let error = try #require(caught)
        #expect(error.kind == .connectionFailed)
        #expect(error.isConnectionProblem)
        #expect(error.message.contains("\(port)"))
        #expect(!error.description.contains("sekret"))
        // Refused at once, not left to the connect_timeout (two minutes here): well within half of it.
        #expect(elapsed < .seconds(60))
    }

    @Test("a terminated backend fails the next query; reconnect restores statements and LISTEN")
    func terminatedBackend() throws {
        let victim = try TestDatabase.connect()
        let admin = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("survives")
        try victim.prepare("plus_one", "SELECT $1::int + 1 AS n")
        try victim.listen(channel)
        let oldProcessID = victim.serverProcessID
        try terminate(oldProcessID, from: admin)

        let error = try #require(throws: PostgresError.self) { try victim.query("SELECT 1") }
        #expect(error.isConnectionProblem)
        #expect(error.kind == .connectionLost)
        #expect(!victim.isHealthy)

        try victim.reconnect()
        #expect(victim.isHealthy)
        #expect(victim.serverProcessID != oldProcessID)
        #expect(try victim.executePrepared("plus_one", ["41"]).int64(0, "n") == 42)
        try admin.query("SELECT pg_notify($1, 'after reconnect')", [channel])
        let received = try NotificationTests.receive(1, on: victim)
        #expect(received.map(\.payload) == ["after reconnect"])
    }

    @Test("a listener whose backend is terminated gets connectionLost from waitForNotifications")
    func terminatedListener() throws {
        let listener = try TestDatabase.connect()
        let admin = try TestDatabase.connect()
        try listener.listen(TestDatabase.uniqueName("doomed"))
        try terminate(listener.serverProcessID, from: admin)
        let error = try #require(throws: PostgresError.self) {
            for _ in 0..<20 { _ = try listener.waitForNotifications(timeoutMilliseconds: 500) }
        }
        #expect(error.kind == .connectionLost)
        #expect(!listener.isHealthy)
    }

    @Test("a closed connection throws connectionLost until reconnected")
    func closed() throws {
        let connection = try TestDatabase.connect()
        connection.close()
        connection.close()
        #expect(!connection.isHealthy)
        #expect(connection.serverProcessID == 0)
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error.kind == .connectionLost)
        try connection.reconnect()
        #expect(try connection.query("SELECT 1 AS one").int64(0, "one") == 1)
    }

    /// Terminates the backend `processID` and waits until it is gone.
    private func terminate(_ processID: Int32, from admin: PostgresConnection) throws {
        let result = try admin.query("SELECT pg_terminate_backend($1) AS ok", [String(processID)])
        try #require(result[0, "ok"] == "t")
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            let alive = try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [String(processID)])
            if alive.isEmpty { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("backend \(processID) still alive 10 s after pg_terminate_backend")
    }
}
