import Foundation
@testable import LocalPostgres
@testable import PostgresClient
import Testing

@Suite("Quoting, error classification and binary lookup (no server)")
struct UnitTests {
    @Test("an error's description says what happened in words, then the server's SQLSTATE and message")
    func descriptionInWords() {
        let refused = PostgresError(kind: .queryFailed, sqlState: "42501", message: "permission denied", hint: "grant")
        #expect(refused.description == "PostgreSQL refused the statement (SQLSTATE 42501): permission denied (hint: grant)")
        let down = PostgresError(kind: .connectionFailed, message: "Connection refused")
        #expect(down.description == "cannot connect to PostgreSQL: Connection refused")
        for kind in [PostgresError.Kind.connectionLost, .badConnectionString, .protocolError] {
            #expect(!PostgresError(kind: kind, message: "m").description.contains("PostgresError"))
        }
    }

    @Test func quoting() {
        #expect(quoteIdentifier("jobs") == "\"jobs\"")
        #expect(quoteIdentifier("a \"b\"") == "\"a \"\"b\"\"\"")
        #expect(quoteLiteral("it's") == "'it''s'")
        #expect(quoteLiteral("a\\b'") == "E'a\\\\b'''")
        #expect(shellQuoted("it's") == "'it'\\''s'")
    }

    @Test("passwords are masked out of messages about a connection string")
    func passwordRedaction() {
        let url = "postgresql://worker:p%40ss@db:5432/app?password=other&sslmode=disable"
        let message = "bad \"postgresql://worker:p%40ss@db:5432/app?password=other\", p@ss, other"
        let redacted = PasswordRedaction.redact(message, connectionString: url)
        #expect(!redacted.contains("p%40ss") && !redacted.contains("p@ss") && !redacted.contains("other"))
        #expect(redacted.contains("worker:********@db"))
        let pairs = "host=db password='it\\'s secret' user=worker"
        #expect(PasswordRedaction.secrets(in: pairs).contains("it's secret"))
        #expect(PasswordRedaction.redact("x it's secret y", connectionString: pairs) == "x ******** y")
        let plain = PasswordRedaction.redact("no secrets here", connectionString: "host=db user=worker")
        #expect(plain == "no secrets here")
    }

    @Test("server options are shell-quoted and follow fsync")
    func serverOptions() throws {
        let binaries = PostgresBinaries(initdb: "/bin/initdb", pgCtl: "/bin/pg_ctl")
        let runner = try CommandRunner(workingDirectory: "/tmp")
        let fast = ServerControl(binaries: binaries, runner: runner, baseDirectory: "/tmp/x y", options: .init())
        let options = fast.serverOptions(port: 5555)
        #expect(options.hasPrefix("-p 5555 -c 'listen_addresses=127.0.0.1' -c 'unix_socket_directories=/tmp/x y'"))
        #expect(options.contains("-c 'fsync=off' -c 'synchronous_commit=off' -c 'full_page_writes=off'"))
        #expect(options.contains("-c 'max_connections=200'"))
        let durable = ServerControl(
            binaries: binaries,
            runner: runner,
            baseDirectory: "/tmp/x",
            options: .init(fsync: true, extraSettings: ["b": "it's", "a": "1"])
        )
        let durableOptions = durable.serverOptions(port: 1)
        #expect(!durableOptions.contains("fsync"))
        #expect(durableOptions.hasSuffix("-c 'a=1' -c 'b=it'\\''s'"))
    }

    @Test("quoted literals and identifiers read back verbatim on the server")
    func quotingOnTheServer() throws {
        let connection = try TestDatabase.connect()
        for text in QueryTests.hostileStrings {
            #expect(try connection.query("SELECT \(quoteLiteral(text)) AS v")[0, "v"] == text)
            let table = quoteIdentifier("t " + text)
            try connection.execute("CREATE TEMP TABLE \(table) (v int); DROP TABLE \(table)")
        }
    }

    @Test(
        "connection problems are recognised by kind and SQLSTATE",
        arguments: [
            (PostgresError.Kind.connectionFailed, nil, true),
            (.connectionLost, nil, true),
            (.queryFailed, "08006", true),
            (.queryFailed, "08P01", true),
            (.queryFailed, "57P01", true),
            (.queryFailed, "57P02", true),
            (.queryFailed, "57P03", true),
            (.queryFailed, "57014", false),
            (.queryFailed, "23505", false),
            (.queryFailed, "40001", false),
            (.badConnectionString, nil, false),
            (.protocolError, nil, false),
        ] as [(PostgresError.Kind, String?, Bool)]
    )
    func connectionProblems(kind: PostgresError.Kind, sqlState: String?, expected: Bool) {
        #expect(PostgresError(kind: kind, sqlState: sqlState, message: "m").isConnectionProblem == expected)
    }

    @Test("missing binaries give the install instructions")
    func missingBinaries() throws {
        let nowhere = try #require(throws: LocalPostgresError.self) {
            try PostgresBinaries.locate(environment: ["PATH": "/nonexistent"], versionedRoot: "/nonexistent")
        }
        #expect(nowhere.code == .binariesNotFound)
        #expect(
            nowhere.description
                == "PostgreSQL server binaries (initdb, pg_ctl) not found: install them with "
                + "`apt-get install -y postgresql` (Debian/Ubuntu) or set PG_BIN to their directory"
        )
        let wrongPGBin = try #require(throws: LocalPostgresError.self) {
            try PostgresBinaries.locate(environment: ["PG_BIN": "/nonexistent", "PATH": "/usr/local/bin:/usr/bin"])
        }
        #expect(wrongPGBin.description.contains("PG_BIN=/nonexistent"))
    }

    @Test("binaries are found in PG_BIN, then PATH, then the newest versioned directory")
    func binaryLookupOrder() throws {
        let files = FileManager.default
        let root = files.temporaryDirectory.appendingPathComponent(TestDatabase.uniqueName("pgroot")).path
        defer { try? files.removeItem(atPath: root) }
        for version in ["9.6", "15", "16", "notes"] {
            let bin = "\(root)/\(version)/bin"
            try files.createDirectory(atPath: bin, withIntermediateDirectories: true)
            for tool in ["initdb", "pg_ctl"] {
                let created = files.createFile(
                    atPath: "\(bin)/\(tool)",
                    contents: Data(),
                    attributes: [.posixPermissions: 0o755]
                )
                try #require(created)
            }
        }
        let newestFirst = PostgresBinaries.versionedDirectories(under: root).prefix(3)
        #expect(newestFirst == ["\(root)/16/bin", "\(root)/15/bin", "\(root)/9.6/bin"])
        let newest = try PostgresBinaries.locate(environment: ["PATH": "/nonexistent"], versionedRoot: root)
        #expect(newest.initdb == "\(root)/16/bin/initdb")
        let onPath = try PostgresBinaries.locate(
            environment: ["PATH": "/nonexistent:\(root)/9.6/bin"],
            versionedRoot: root
        )
        #expect(onPath.pgCtl == "\(root)/9.6/bin/pg_ctl")
        let explicit = try PostgresBinaries.locate(
            environment: ["PG_BIN": "\(root)/15/bin", "PATH": "\(root)/16/bin"],
            versionedRoot: root
        )
        #expect(explicit.initdb == "\(root)/15/bin/initdb")
    }
}
