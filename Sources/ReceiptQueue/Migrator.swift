import Foundation
import PostgresClient

/// Applies the numbered files of `sql/` in order, each once, each in its own transaction, under an advisory lock
/// (several processes may start at once). Records a checksum per file and refuses to run when an applied file
/// has since changed. Files applied by hand with `psql -f` record themselves; their checksum is filled in here.
public struct Migrator: Sendable {
    public struct Migration: Sendable, Hashable {
        public var version: String
        public var sql: String
    }

    public let directory: String
    public let migrations: [Migration]

    /// The advisory lock key ("receipt" in ASCII).
    static let lockKey: Int64 = 0x7265_6365_6970_74

    public init(directory: String) throws(QueueError) {
        self.directory = directory
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw QueueError("cannot read the SQL directory \(directory): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") && name.first?.isNumber == true {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let sql = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw QueueError("cannot read \(path)")
            }
            migrations.append(Migration(version: String(name.dropLast(4)), sql: sql))
        }
        if migrations.isEmpty {
            throw QueueError("no migrations (NNN_name.sql) in \(directory)")
        }
        self.migrations = migrations
    }

    /// Finds `sql/`: an explicit directory, `RECEIPT_WORKER_SQL_DIR`, `<prefix>/share/receipt-worker/sql` beside
    /// the executable, a `sql/` in a parent of the executable (a source checkout), or `./sql`.
    public static func locateDirectory(explicit: String?, environment: [String: String]) throws(QueueError) -> String {
        if let explicit { return explicit }
        if let fromEnvironment = environment["RECEIPT_WORKER_SQL_DIR"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        var candidates: [String] = []
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
        var folder = executable.deletingLastPathComponent()
        candidates.append(folder.appendingPathComponent("../share/receipt-worker/sql").standardized.path)
        for _ in 0..<6 {
            candidates.append(folder.appendingPathComponent("sql").path)
            folder = folder.deletingLastPathComponent()
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/sql")
        for candidate in candidates where FileManager.default.fileExists(atPath: candidate + "/001_schema.sql") {
            return candidate
        }
        throw QueueError(
            "cannot find the SQL migrations (sql/001_schema.sql): pass --sql-dir or set RECEIPT_WORKER_SQL_DIR"
        )
    }

    /// Applies what is missing; returns the versions applied now.
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws -> [String] {
        _ = try connection.query("SELECT pg_advisory_lock($1)", [String(Self.lockKey)])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [String(Self.lockKey)]) }
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS receipt_schema_migrations (
                version text PRIMARY KEY, checksum text, applied_at timestamptz NOT NULL DEFAULT now())
            """
        )
        let recorded = try appliedChecksums(connection)
        var applied: [String] = []
        for migration in migrations {
            let checksum = try self.checksum(of: migration, on: connection)
            if let existing = recorded[migration.version] {
                if let existing, existing != checksum {
                    throw QueueError(
                        "sql/\(migration.version).sql changed after it was applied (checksum \(existing.prefix(12)) → "
                            + "\(checksum.prefix(12))): restore the file, and put schema changes in a new numbered file"
                    )
                }
                if existing == nil {
                    _ = try connection.query(
                        "UPDATE receipt_schema_migrations SET checksum = $2 WHERE version = $1",
                        [migration.version, checksum]
                    )
                }
                continue
            }
            do {
                try connection.withTransaction {
                    try connection.execute(migration.sql)
                    _ = try connection.query(
                        """
                        INSERT INTO receipt_schema_migrations (version, checksum) VALUES ($1, $2)
                        ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum
                        """,
                        [migration.version, checksum]
                    )
                }
            } catch let error as PostgresError {
                throw QueueError("sql/\(migration.version).sql failed: \(error)")
            }
            applied.append(migration.version)
        }
        return applied
    }

    /// The versions not applied yet (empty when the database is current).
    public func pending(_ connection: PostgresConnection) throws -> [String] {
        let exists = try connection.query("SELECT to_regclass('receipt_schema_migrations') IS NOT NULL AS present")
        guard exists[0, "present"] == "t" else { return migrations.map(\.version) }
        let recorded = try appliedChecksums(connection)
        return migrations.map(\.version).filter { recorded[$0] == nil }
    }

    private func appliedChecksums(_ connection: PostgresConnection) throws -> [String: String?] {
        let rows = try connection.query("SELECT version, checksum FROM receipt_schema_migrations")
        var result: [String: String?] = [:]
        for index in rows.rows.indices {
            result[rows[index, "version"] ?? ""] = .some(rows[index, "checksum"])
        }
        return result
    }

    private func checksum(of migration: Migration, on connection: PostgresConnection) throws -> String {
        let result = try connection.query("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex') AS sum", [migration.sql])
        return result[0, "sum"] ?? ""
    }
}
