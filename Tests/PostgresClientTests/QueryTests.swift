import PostgresClient
import Testing

@Suite("Queries, prepared statements and errors")
struct QueryTests {
    static let hostileStrings = [
        "'; DROP TABLE x; --",
        "Robert'); DROP TABLE students;--",
        "$1 $2 ?",
        "back\\slash \\' \\x41",
        "ünïcödé 日本語 🧾 e\u{301}",
        "\"double\" and 'single' quotes",
        "",
        "  spaces  ",
        "line\nbreak\ttab\r",
    ]

    @Test("parameters arrive verbatim and are never spliced into the SQL")
    func parametersRoundTrip() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE x (id serial PRIMARY KEY, value text NOT NULL)")
        for value in Self.hostileStrings {
            let inserted = try connection.query(
                "INSERT INTO x (value) VALUES ($1) RETURNING value, length(value)",
                [value]
            )
            #expect(inserted.affectedRows == 1)
            #expect(inserted[0, "value"] == value)
            #expect(inserted.int64(0, "length") == Int64(value.unicodeScalars.count))
        }
        let stored = try connection.query("SELECT value FROM x ORDER BY id")
        #expect(stored.rows.map { $0[0] } == Self.hostileStrings)
        #expect(stored.affectedRows == Self.hostileStrings.count)
    }

    @Test("nil is SQL NULL both ways, and differs from the empty string")
    func nulls() throws {
        let connection = try TestDatabase.connect()
        let result = try connection.query(
            "SELECT $1::text AS a, $2::text AS b, NULL::int AS c, 42::bigint AS d, $1::text IS NULL AS a_null,"
                + " $3::text IS NULL AS empty_null",
            [nil, "x", ""]
        )
        #expect(result.columns == ["a", "b", "c", "d", "a_null", "empty_null"])
        #expect(result.rows.count == 1)
        #expect(result[0, "a"] == nil)
        #expect(result[0, "b"] == "x")
        #expect(result[0, "c"] == nil)
        #expect(result.int64(0, "d") == 42)
        #expect(result[0, "a_null"] == "t")
        #expect(result[0, "empty_null"] == "f")
        #expect(result[0, "no_such_column"] == nil)
        #expect(result[1, "d"] == nil)
        #expect(result.int64(0, "b") == nil)
        #expect(try connection.query("SELECT 1 WHERE false").isEmpty)
    }

    @Test("a parameter with a NUL character is refused, not truncated")
    func nulCharacter() throws {
        let connection = try TestDatabase.connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT $1::text", ["abc\u{0}def"])
        }
        #expect(error.message.contains("$1"))
        #expect(try connection.query("SELECT 1 AS one").int64(0, "one") == 1)
    }

    @Test("prepared statements run many times with different parameters")
    func preparedStatements() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE counters (name text PRIMARY KEY, hits int NOT NULL)")
        try connection.prepare(
            "bump",
            """
            INSERT INTO counters VALUES ($1, 1)
            ON CONFLICT (name) DO UPDATE SET hits = counters.hits + 1
            RETURNING hits
            """
        )
        for _ in 0..<3 {
            try connection.executePrepared("bump", ["a"])
        }
        #expect(try connection.executePrepared("bump", ["a"]).int64(0, "hits") == 4)
        #expect(try connection.executePrepared("bump", ["'; DROP TABLE counters; --"]).int64(0, "hits") == 1)

        let duplicate = try #require(throws: PostgresError.self) { try connection.prepare("bump", "SELECT 1") }
        #expect(duplicate.sqlState == "42P05")
        let unknown = try #require(throws: PostgresError.self) { try connection.executePrepared("nope", []) }
        #expect(unknown.sqlState == "26000")
        #expect(try connection.executePrepared("bump", ["a"]).int64(0, "hits") == 5)
    }

    @Test("server errors carry SQLSTATE, constraint and detail, and leave the connection usable")
    func serverErrors() throws {
        let connection = try TestDatabase.connect()
        try connection.execute(
            "CREATE TEMP TABLE receipts (id int, transaction_id text CONSTRAINT receipts_transaction_unique UNIQUE)"
        )
        try connection.query("INSERT INTO receipts VALUES (1, $1)", ["tx-1"])
        let duplicate = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO receipts VALUES (2, $1)", ["tx-1"])
        }
        #expect(duplicate.kind == .queryFailed)
        #expect(duplicate.sqlState == "23505")
        #expect(duplicate.constraint == "receipts_transaction_unique")
        #expect(duplicate.detail?.contains("tx-1") == true)
        #expect(!duplicate.isConnectionProblem)

        let missing = try #require(throws: PostgresError.self) { try connection.query("SELECT * FROM no_such_table") }
        #expect(missing.sqlState == "42P01")
        #expect(missing.message.contains("no_such_table"))
        #expect(missing.description.contains("42P01"))

        let syntax = try #require(throws: PostgresError.self) { try connection.execute("SELEC 1") }
        #expect(syntax.sqlState == "42601")
        #expect(connection.isHealthy)
        #expect(try connection.query("SELECT count(*) AS n FROM receipts").int64(0, "n") == 1)
    }

    @Test("execute runs several statements and stops at the first error, which undoes the batch")
    func executeScript() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE m (v int); INSERT INTO m VALUES (1); INSERT INTO m VALUES (2);")
        #expect(try connection.query("SELECT count(*) AS n FROM m").int64(0, "n") == 2)

        let error = try #require(throws: PostgresError.self) {
            try connection.execute("INSERT INTO m VALUES (3); SELECT 1/0; INSERT INTO m VALUES (4)")
        }
        #expect(error.sqlState == "22012")
        #expect(try connection.query("SELECT count(*) AS n FROM m").int64(0, "n") == 2)
        try connection.execute("")
    }

    @Test("COPY to or from the client is refused and the connection stays usable")
    func copyIsRefused() throws {
        let connection = try TestDatabase.connect()
        try connection.execute("CREATE TEMP TABLE c (v int)")
        let out = try #require(throws: PostgresError.self) {
            try connection.execute("COPY (SELECT generate_series(1, 1000)) TO STDOUT")
        }
        #expect(out.kind == .protocolError)
        let into = try #require(throws: PostgresError.self) { try connection.query("COPY c FROM STDIN") }
        #expect(into.kind == .protocolError)
        #expect(try connection.query("SELECT count(*) AS n FROM c").int64(0, "n") == 0)
        #expect(try connection.query("SELECT 2 AS two").int64(0, "two") == 2)
    }

    @Test("the default application_name and client encoding, unless the connection string sets them")
    func connectionDefaults() throws {
        let url = try TestDatabase.url.get()
        let plain = try PostgresConnection(url)
        #expect(try plain.query("SHOW application_name")[0, "application_name"] == "receipt-worker")
        #expect(try plain.query("SHOW client_encoding")[0, "client_encoding"] == "UTF8")

        let isURL = url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
        let separator = isURL ? (url.contains("?") ? "&" : "?") : " "
        let named = try PostgresConnection(url + separator + "application_name=my-tool")
        #expect(try named.query("SHOW application_name")[0, "application_name"] == "my-tool")
        #expect(named.serverProcessID != plain.serverProcessID)
        #expect(named.serverProcessID > 0)
    }

    @Test("server notices go to the handler, not stderr")
    func notices() throws {
        let connection = try TestDatabase.connect()
        var notices: [String] = []
        connection.noticeHandler = { notices.append($0) }
        try connection.execute("DO $$ BEGIN RAISE NOTICE 'hello %', 42; END $$")
        #expect(notices.count == 1)
        #expect(notices.first?.contains("hello 42") == true)
        connection.noticeHandler = nil
        try connection.execute("DO $$ BEGIN RAISE NOTICE 'dropped'; END $$")
        #expect(notices.count == 1)
    }
}
