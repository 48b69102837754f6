import PostgresClient
import Testing

@Suite("withTransaction")
struct TransactionTests {
    struct Boom: Error {}

    @Test("commits on success and rolls back on a thrown error, rethrowing it")
    func commitAndRollback() throws {
        let connection = try TestDatabase.connect()
        let observer = try TestDatabase.connect()
        let table = quoteIdentifier(TestDatabase.uniqueName("tx"))
        try connection.execute("CREATE TABLE \(table) (v int)")
        defer { try? connection.execute("DROP TABLE \(table)") }
        func count(_ connection: PostgresConnection) throws -> Int64? {
            try connection.query("SELECT count(*) AS n FROM \(table)").int64(0, "n")
        }

        let value = try connection.withTransaction {
            try connection.query("INSERT INTO \(table) VALUES (1)")
            #expect(try count(observer) == 0, "another connection must not see uncommitted rows")
            return 7
        }
        #expect(value == 7)
        #expect(try count(observer) == 1)

        #expect(throws: Boom.self) {
            try connection.withTransaction {
                try connection.query("INSERT INTO \(table) VALUES (2)")
                throw Boom()
            }
        }
        #expect(try count(observer) == 1)

        let sqlError = try #require(throws: PostgresError.self) {
            try connection.withTransaction {
                try connection.query("INSERT INTO \(table) VALUES (3)")
                try connection.query("SELECT 1/0")
            }
        }
        #expect(sqlError.sqlState == "22012")
        #expect(try count(connection) == 1)
    }

    @Test("a COMMIT that the server turns into a rollback throws")
    func failedCommit() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE t (v int)")
        let error = try #require(throws: PostgresError.self) {
            try connection.withTransaction {
                try connection.query("INSERT INTO t VALUES (1)")
                _ = try? connection.query("SELECT 1/0")
            }
        }
        #expect(error.sqlState == "25P02")
        #expect(try connection.query("SELECT count(*) AS n FROM t").int64(0, "n") == 0)
        try connection.withTransaction { try connection.query("INSERT INTO t VALUES (2)") }
        #expect(try connection.query("SELECT count(*) AS n FROM t").int64(0, "n") == 1)
    }

    @Test("transactions do not nest")
    func noNesting() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE t (v int)")
        var innerRan = false
        #expect(throws: PostgresError.self) {
            try connection.withTransaction {
                try connection.query("INSERT INTO t VALUES (1)")
                try connection.withTransaction { innerRan = true }
            }
        }
        #expect(!innerRan)
        #expect(try connection.query("SELECT count(*) AS n FROM t").int64(0, "n") == 0)
    }
}
