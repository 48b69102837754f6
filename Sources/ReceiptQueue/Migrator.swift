import Foundation
import PostgresClient

/// Brings a database to the SQL of `sql/` (see `SQLManifest`): the migrations not applied yet, each once, then the
/// definitions (functions, triggers, views) whose files changed — all of them after any migration — all in one
/// transaction, under an advisory lock (several processes may start at once). Records a checksum per migration and
/// per definition, and refuses to run when an applied migration has since changed or the database records a
/// migration this version does not know. Migrations applied by hand with `psql -f sql/apply.sql` record themselves
/// without a checksum; it is filled in here. Refuses a connection that would create them outside schema `public`
/// (see `Migrator+Schema.swift`).
public struct Migrator: Sendable {
    public let directory: String
    public let manifest: SQLManifest

    /// The numbered migrations, in order.
    public var migrations: [SQLManifest.File] { manifest.migrations }
    /// The definition files, in order.
    public var definitions: [SQLManifest.File] { manifest.definitions }

    /// The advisory lock key ("receipt" in ASCII).
    static let lockKey: Int64 = 0x7265_6365_6970_74

    public init(directory: String) throws(QueueError) {
        self.directory = directory
        self.manifest = try SQLManifest(directory: directory)
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
        for candidate in candidates
        where FileManager.default.fileExists(atPath: candidate + "/" + SQLManifest.manifestName) {
            return candidate
        }
        throw QueueError(
            .sqlFiles,
            "cannot find the SQL files (sql/\(SQLManifest.manifestName)): pass --sql-dir or set RECEIPT_WORKER_SQL_DIR"
        )
    }

    /// Applies what is missing or changed; returns what it applied: migration versions, then definition paths.
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws -> [String] {
        try Self.checkSchema(connection)
        _ = try connection.query("SELECT pg_advisory_lock($1)", [String(Self.lockKey)])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [String(Self.lockKey)]) }
        return try connection.withTransaction {
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS receipt_schema_migrations (
                    version text PRIMARY KEY, checksum text, applied_at timestamptz NOT NULL DEFAULT now())
                """
            )
            let sums = try checksums(on: connection)
            let recorded = try recordedMigrations(connection)
            try check(recorded: recorded, sums: sums)
            var applied: [String] = []
            for migration in migrations {
                let checksum = sums[migration.path] ?? ""
                if let existing = recorded[migration.name] {
                    if existing == nil {
                        _ = try connection.query(
                            "UPDATE receipt_schema_migrations SET checksum = $2 WHERE version = $1",
                            [migration.name, checksum]
                        )
                    }
                    continue
                }
                try apply(migration, on: connection)
                _ = try connection.query(
                    """
                    INSERT INTO receipt_schema_migrations (version, checksum) VALUES ($1, $2)
                    ON CONFLICT (version) DO UPDATE SET checksum = excluded.checksum
                    """,
                    [migration.name, checksum]
                )
                applied.append(migration.name)
            }
            // A migration may have dropped or altered what a definition built on: after one, every definition.
            let current = applied.isEmpty ? try recordedDefinitions(connection) : [:]
            for definition in definitions where current[definition.name] != sums[definition.path] {
                try apply(definition, on: connection)
                _ = try connection.query(
                    """
                    INSERT INTO receipt_schema_definitions (name, checksum) VALUES ($1, $2)
                    ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
                    """,
                    [definition.name, sums[definition.path] ?? ""]
                )
                applied.append(definition.name)
            }
            // Every time, not only after a change: a function created since (by hand, or by a psql run of an
            // older apply.sql) is covered too. A few catalog reads when nothing is left to revoke.
            try apply(manifest.privileges, on: connection)
            return applied
        }
    }

    /// One line on what `migrate` returned: "current (2 migrations, 21 definitions)", or what it applied.
    public func summary(ofApplied applied: [String]) -> String {
        guard !applied.isEmpty else {
            return "current (\(migrations.count) migrations, \(definitions.count) definitions)"
        }
        let versions = Set(migrations.map(\.name))
        let schema = applied.filter(versions.contains)
        let definitions = applied.count - schema.count
        var parts: [String] = []
        if !schema.isEmpty { parts.append("migrations \(schema.joined(separator: ", "))") }
        if definitions > 0 { parts.append("\(definitions) of \(self.definitions.count) definitions") }
        return "applied " + parts.joined(separator: " and ")
    }

    /// What `migrate` would apply: migration versions not applied yet, then definitions whose file changed (empty
    /// when the database is current).
    public func pending(_ connection: PostgresConnection) throws -> [String] {
        let exists = try connection.query(
            """
            SELECT to_regclass('receipt_schema_migrations') IS NOT NULL AS migrations,
                   to_regclass('receipt_schema_definitions') IS NOT NULL AS definitions
            """
        )
        guard exists[0, "migrations"] == "t" else { return migrations.map(\.name) + definitions.map(\.name) }
        let recorded = try recordedMigrations(connection)
        let missing = migrations.map(\.name).filter { recorded[$0] == nil }
        guard missing.isEmpty, exists[0, "definitions"] == "t" else { return missing + definitions.map(\.name) }
        let sums = try checksums(on: connection)
        let current = try recordedDefinitions(connection)
        return definitions.filter { current[$0.name] != sums[$0.path] }.map(\.name)
    }

    /// Every recorded migration must be one of ours with the current or an accepted earlier checksum.
    private func check(recorded: [String: String?], sums: [String: String]) throws(QueueError) {
        let files = Dictionary(uniqueKeysWithValues: migrations.map { ($0.name, $0) })
        for (version, existing) in recorded.sorted(by: { $0.key < $1.key }) {
            let accepted = manifest.acceptedChecksums[version] ?? []
            guard let file = files[version] else {
                if !accepted.isEmpty, existing == nil || accepted.contains(existing!) { continue }
                throw QueueError(
                    .unknownMigration,
                    "the database records migration \(version), which these SQL files do not have: it was migrated "
                        + "by a newer receipt-worker (migrations are forward-only), or by a modified copy"
                )
            }
            guard let existing, let current = sums[file.path], existing != current else { continue }
            if accepted.contains(existing) { continue }
            throw QueueError(
                .changedMigration,
                "sql/\(file.path) changed after it was applied (checksum \(existing.prefix(12)) → "
                    + "\(current.prefix(12))): restore the file, and put schema changes in a new numbered file"
            )
        }
    }

    private func apply(_ file: SQLManifest.File, on connection: PostgresConnection) throws(QueueError) {
        do {
            try connection.execute(file.sql)
        } catch let error as PostgresError {
            throw QueueError(.migrationFailed, "sql/\(file.path) failed", postgres: error)
        } catch {
            throw QueueError(.migrationFailed, "sql/\(file.path) failed: \(error)")
        }
    }

    private func recordedMigrations(_ connection: PostgresConnection) throws -> [String: String?] {
        let rows = try connection.query("SELECT version, checksum FROM receipt_schema_migrations")
        var result: [String: String?] = [:]
        for index in rows.rows.indices {
            result[rows[index, "version"] ?? ""] = .some(rows[index, "checksum"])
        }
        return result
    }

    private func recordedDefinitions(_ connection: PostgresConnection) throws -> [String: String] {
        let rows = try connection.query("SELECT name, checksum FROM receipt_schema_definitions")
        var result: [String: String] = [:]
        for index in rows.rows.indices {
            result[rows[index, "name"] ?? ""] = rows[index, "checksum"]
        }
        return result
    }

    /// The hex SHA-256 of every file, by path, computed by the server in one round trip.
    private func checksums(on connection: PostgresConnection) throws -> [String: String] {
        let files = migrations + definitions
        let rows = try connection.query(
            "SELECT encode(sha256(convert_to(f, 'UTF8')), 'hex') AS sum FROM unnest($1::text[]) WITH ORDINALITY AS t(f, n) "
                + "ORDER BY n",
            [PostgresArray.text(files.map(\.sql))]
        )
        var result: [String: String] = [:]
        for (index, file) in files.enumerated() {
            result[file.path] = rows[index, "sum"]
        }
        return result
    }
}
