import PostgresClient

/// Whether a database holds the schema this build's commands need, checked before `work`, `status` and `sweep` use
/// it: a database never migrated, or migrated by an older version, otherwise shows up as `relation … does not exist`
/// or `function receipt_claim(unknown, …) does not exist`, which do not say what to do.
public struct SchemaCheck: Sendable, Hashable {
    /// No `receipt_schema_migrations` table: `receipt-worker migrate` never ran on this database.
    public var isMissing: Bool
    /// Migrations of this build the database has not applied (empty when it is missing: all of them are).
    public var missingMigrations: [String]
    /// Definition files (functions, triggers, views) whose applied checksum differs from this build's file. Not an
    /// error: a worker older than the last `migrate` sees the newer definitions so.
    public var changedDefinitions: [String]

    /// True when the commands can run: the schema is there and every migration of this build is applied.
    public var isCurrent: Bool { !isMissing && missingMigrations.isEmpty }

    /// What is wrong, naming `receipt-worker migrate`; nil when `isCurrent`.
    public var problem: SchemaProblem? {
        if isMissing {
            return SchemaProblem(
                "the database has no receipt-worker schema (table receipt_schema_migrations does not exist): run "
                    + "`receipt-worker migrate` with the same DATABASE_URL (as the database owner) first"
            )
        }
        guard !missingMigrations.isEmpty else { return nil }
        return SchemaProblem(
            "the database's schema is older than this receipt-worker (migrations not applied: "
                + missingMigrations.joined(separator: ", ") + "): run `receipt-worker migrate` (as the database owner)"
        )
    }
}

/// The schema is missing or older than this build; `receipt-worker migrate` fixes it (exit status 3).
public struct SchemaProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Migrator {
    /// Compares the database with this build's SQL files (read-only; takes no lock).
    public func check(_ connection: PostgresConnection) throws -> SchemaCheck {
        guard try Self.hasSchema(connection) else {
            return SchemaCheck(isMissing: true, missingMigrations: [], changedDefinitions: [])
        }
        let pending: [String]
        do {
            pending = try self.pending(connection)
        } catch let error as PostgresError where error.sqlState == "42501" {
            // A role that may not read the migration records (receipt_operator under deploy/sql/roles.sql): the
            // schema is there, which is all it can tell.
            return SchemaCheck(isMissing: false, missingMigrations: [], changedDefinitions: [])
        }
        let versions = Set(migrations.map(\.name))
        return SchemaCheck(
            isMissing: false, missingMigrations: pending.filter(versions.contains),
            changedDefinitions: pending.filter { !versions.contains($0) }
        )
    }

    /// The check when this build's SQL files cannot be found (a binary installed without them): only whether the
    /// schema is there at all.
    public static func checkPresence(_ connection: PostgresConnection) throws -> SchemaCheck {
        SchemaCheck(isMissing: !(try hasSchema(connection)), missingMigrations: [], changedDefinitions: [])
    }

    /// Checks with the SQL files found as `migrate` finds them, or, without them, the schema's presence only.
    public static func check(
        _ connection: PostgresConnection, sqlDirectory: String?, environment: [String: String]
    ) throws -> SchemaCheck {
        guard let directory = try? locateDirectory(explicit: sqlDirectory, environment: environment),
            let migrator = try? Migrator(directory: directory)
        else { return try checkPresence(connection) }
        return try migrator.check(connection)
    }

    static func hasSchema(_ connection: PostgresConnection) throws -> Bool {
        try connection.query(
            "SELECT to_regclass('receipt_schema_migrations') IS NOT NULL AND to_regclass('receipt_jobs') IS NOT NULL AS ok"
        )[0, "ok"] == "t"
    }
}
