import PostgresClient
import Testing

@Suite("ConnectionString: the same server, another database")
struct ConnectionStringTests {
    @Test("a URL keeps its user, host, port and query, and gets the new database as its path")
    func url() {
        let url = "postgresql://app:secret@db:5432/payments?sslmode=require"
        #expect(
            ConnectionString.replacingDatabase(in: url, with: "scratch")
                == "postgresql://app:secret@db:5432/scratch?sslmode=require"
        )
        #expect(ConnectionString.replacingDatabase(in: "postgres://db", with: "x") == "postgres://db/x")
        #expect(ConnectionString.replacingDatabase(in: "postgres://db?application_name=a", with: "x")
            == "postgres://db/x?application_name=a")
    }

    @Test("a database name with spaces, slashes or non-ASCII letters is percent-encoded in a URL")
    func encodedName() {
        #expect(ConnectionString.replacingDatabase(in: "postgresql://127.0.0.1:5433/postgres", with: "a db/é")
            == "postgresql://127.0.0.1:5433/a%20db%2F%C3%A9")
    }

    @Test("key=value pairs get a quoted dbname at the end, which libpq lets override an earlier one")
    func keyValue() {
        #expect(ConnectionString.replacingDatabase(in: "host=db dbname=payments", with: "scratch")
            == "host=db dbname=payments dbname='scratch'")
        #expect(ConnectionString.replacingDatabase(in: "host=db", with: #"it's a\b"#)
            == #"host=db dbname='it\'s a\\b'"#)
    }
}
