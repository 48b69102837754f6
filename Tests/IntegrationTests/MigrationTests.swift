import Foundation
import PostgresClient
@testable import ReceiptQueue
import ReceiptRules
import Synchronization
import Testing

/// `migrate` and `psql -f sql/apply.sql` on real databases: a database set up by the earlier numbered layout
/// (Tests/Fixtures/sql-v1, frozen) upgrades with nothing lost; both ways of applying give the same schema; changed,
/// unknown and failing files are refused with nothing half-applied.
@Suite("Migrations", .serialized, .ownThread)
struct MigrationTests {
    static let frozen = TestServer.repositoryRoot.appendingPathComponent("Tests/Fixtures/sql-v1").path

    /// Applies the frozen files the way the earlier `migrate` did: each in a transaction, then its checksum recorded.
    static func applyFrozen(_ connection: PostgresConnection) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: frozen).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(names.count == 6)
        for name in names {
            let sql = try String(contentsOfFile: frozen + "/" + name, encoding: .utf8)
            try connection.withTransaction {
                try connection.execute(sql)
                _ = try connection.query(
                    """
                    UPDATE receipt_schema_migrations SET checksum = encode(sha256(convert_to($2, 'UTF8')), 'hex')
                    WHERE version = $1
                    """,
                    [String(name.dropLast(4)), sql]
                )
            }
        }
    }

    /// Tables, columns, indexes, constraints, triggers, functions, views and types of the public schema, as text.
    static func catalog(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.query(
            """
            SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' '
                   || coalesce(array_to_string(c.reloptions, ','), '') AS line
            FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
                   || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
            UNION ALL
            SELECT 'index ' || pg_get_indexdef(i.indexrelid)
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
            FROM pg_constraint WHERE connamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
            UNION ALL
            SELECT 'function ' || p.oid::regprocedure::text || ' ' || pg_get_functiondef(p.oid)
            FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'view ' || c.relname || ' ' || pg_get_viewdef(c.oid)
            FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = 'public'::regnamespace
            ORDER BY 1
            """
        )
        return rows.rows.map { $0[0] ?? "" }
    }

    /// Every row of the tables that hold the service's state, as text, leaving out the job columns named.
    /// Every row of the tables the earlier layout had, without the columns `added` names for each table (columns later
    /// migrations added, which the earlier rows did not have).
    static func contents(_ connection: PostgresConnection, withoutColumns added: [String: [String]] = [:]) throws -> [String] {
        var lines: [String] = []
        for table in ["receipt_jobs", "receipt_transactions", "receipt_purchase_owners", "receipt_apps",
                      "receipt_products", "receipt_admin_log"] {
            let rows = try connection.query(
                "SELECT (to_jsonb(t) - $1::text[])::text AS line FROM \(table) t ORDER BY 1",
                ["{" + (added[table] ?? []).joined(separator: ",") + "}"]
            )
            lines += rows.rows.map { table + " " + ($0[0] ?? "") }
        }
        return lines
    }

    /// What the earlier layout's receipt_claim() returned: the jobs it claimed, with their leases.
    static func claimWithEarlierFunctions(_ db: PostgresConnection, limit: Int) throws -> [Lease] {
        let rows = try db.query("SELECT id, lease_token FROM receipt_claim('old', $1, 60)", [String(limit)])
        return rows.rows.indices.map { Lease(jobId: rows.int64($0, "id") ?? 0, token: rows[$0, "lease_token"] ?? "") }
    }

    /// The SQL directory copied to a temporary place, for tests that change files.
    static func copyOfSQL() throws -> String {
        let copy = NSTemporaryDirectory() + "rw-sql-\(UUID().uuidString)"
        try FileManager.default.copyItem(atPath: TestServer.sqlDirectory, toPath: copy)
        return copy
    }

    @Test("a database of the earlier layout, with jobs, credits and owners, upgrades with nothing lost")
    func upgradeFromNumberedLayout() throws {
        let url = try TestServer.get().emptyDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        try Self.applyFrozen(db)
        let store = JobStore(connection: db)
        try store.registerApps(TestServer.bundleIds)
        _ = try db.query("INSERT INTO receipt_products (product_id, kind) VALUES ('pro.lifetime', 'non_consumable')")

        // State of every kind, written by the earlier functions.
        let receipt = Harness.receipt(purchases: [Harness.purchase("1000")])
        for order in ["o-1", "o-2", "o-3", "o-4"] {
            _ = try store.enqueue(
                receiptData: receipt, orderId: order, userId: "u-\(order)", productId: "pro.monthly",
                bundleId: "com.example.app"
            )
        }
        _ = try store.enqueue(
            receiptData: "not base64!", orderId: "o-bad", userId: "u", productId: "pro.monthly",
            bundleId: "com.example.app"
        )
        let claimed = try Self.claimWithEarlierFunctions(db, limit: 3)
        #expect(claimed.count == 3)
        let purchase = { (id: String) in
            Purchase(transactionId: id, originalTransactionId: id, productId: "pro.monthly", purchaseDateMs: Harness.now)
        }
        let written = try db.query("SELECT state FROM receipt_complete($1::jsonb)", [try JobOutcome.jsonArray([
            JobOutcome(lease: claimed[0], kind: .verified, appleStatus: 0, environment: .production,
                       candidates: [purchase("t-1")], maxAttempts: 5),
            JobOutcome(lease: claimed[1], kind: .verified, appleStatus: 0, environment: .sandbox,
                       candidates: [purchase("t-2")], maxAttempts: 5),
            JobOutcome(lease: claimed[2], kind: .retry, error: "timeout", retryInSeconds: 30, maxAttempts: 5),
        ])])
        #expect(written.rows.map { $0[0] } == ["verified", "verified", "retry"])
        let before = try Self.contents(db)
        #expect(try db.query("SELECT count(*) AS n FROM receipt_transactions")[0, "n"] == "2")

        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let applied = try migrator.migrate(db)
        let newer = migrator.migrations.map(\.name).filter { $0 >= "007" }
        #expect(newer.first == "007_definitions_layout")
        #expect(applied == newer + migrator.definitions.map(\.name))
        // 008: receipt_jobs.kind, signed_transaction, app_account_token; 009: receipt_apps.app_apple_id,
        // receipt_products.duration, receipt_transactions.notification_id; 013: receipt_transactions.in_app_ownership_type;
        // 016: the ledger's price and revocation share, receipt_products.refund_preference; 019: receipt_products.sku;
        // 020: the ledger's billing_plan_type and signed_at; 029: its storefront_id.
        let added = [
            "receipt_jobs": ["kind", "signed_transaction", "app_account_token"], "receipt_apps": ["app_apple_id"],
            "receipt_products": ["duration", "refund_preference", "sku"],
            "receipt_transactions": [
                "notification_id", "in_app_ownership_type", "price", "currency", "storefront", "offer_type",
                "offer_discount_type", "transaction_reason", "revocation_type", "revocation_percentage",
                "billing_plan_type", "signed_at", "storefront_id",
            ],
        ]
        let after = try Self.contents(db, withoutColumns: added)
        #expect(after == before, "\(Set(after).symmetricDifference(before).sorted())")
        #expect(try db.query("SELECT count(*) AS n FROM receipt_jobs WHERE kind <> 'receipt'")[0, "n"] == "0")
        #expect(try migrator.migrate(db).isEmpty)
        #expect(try migrator.pending(db).isEmpty)

        // The same schema as a database migrated from nothing.
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        let (upgraded, new) = (try Self.catalog(db), try Self.catalog(fresh))
        #expect(upgraded == new, "\(Set(upgraded).symmetricDifference(new).sorted())")

        // The queue goes on: the retrying job, the queued one, and a new order for a purchase credited before.
        _ = try db.query("UPDATE receipt_jobs SET run_at = now() WHERE state = 'retry'")
        _ = try store.sweep(maxAttempts: 5)
        _ = try store.enqueue(
            receiptData: receipt, orderId: "o-5", userId: "u-o-1", productId: "pro.monthly", bundleId: "com.example.app"
        )
        let next = try store.claim(worker: "new", limit: 10, leaseSeconds: 60)
        #expect(next.count == 3)
        let completions = try store.complete(next.map { job in
            JobOutcome(lease: job.lease, kind: .verified, appleStatus: 0, environment: .production,
                       candidates: [purchase(job.order.orderId == "o-5" ? "t-1" : "t-\(job.order.orderId)")],
                       maxAttempts: 5)
        })
        let byOrder = Dictionary(uniqueKeysWithValues: zip(next.map(\.order.orderId), completions))
        #expect(byOrder["o-3"]?.state == .verified)
        #expect(byOrder["o-4"]?.state == .verified)
        #expect(byOrder["o-5"]?.state == .rejected)
        #expect(byOrder["o-5"]?.reason == "already_credited")
    }

    /// docs/sql.md: on a large receipt_jobs, 011's two indexes are built first with CREATE INDEX CONCURRENTLY (which does
    /// not block writes), and migrate then keeps them.
    @Test("011's indexes built beforehand with CREATE INDEX CONCURRENTLY, as docs/sql.md shows, are kept by migrate")
    func retentionIndexesBuiltConcurrently() throws {
        let url = try TestServer.get().freshDatabase()
        let db = try PostgresConnection(url)
        defer { db.close() }
        // Back to the schema before 011.
        _ = try db.query("""
            DROP INDEX receipt_jobs_retained, receipt_jobs_deletable, receipt_events_delivered,
                       receipt_notifications_finished
            """)
        _ = try db.query("CREATE INDEX receipt_jobs_finished ON receipt_jobs (finished_at) WHERE finished_at IS NOT NULL")
        _ = try db.query("DELETE FROM receipt_schema_migrations WHERE version = '011_retention_indexes'")
        // The statements docs/sql.md gives, each on its own outside a transaction.
        let statements = try Self.concurrentIndexStatements(on: "receipt_jobs").filter {
            $0.contains("receipt_jobs_retained") || $0.contains("receipt_jobs_deletable")
        }
        #expect(statements.count == 2)
        for statement in statements { _ = try db.query(statement) }

        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let applied = try migrator.migrate(db)
        #expect(applied.filter { name in migrator.migrations.contains { $0.name == name } } == ["011_retention_indexes"])
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        #expect(try Self.catalog(db) == Self.catalog(fresh))
    }

    /// docs/sql.md: on a large ledger, 022's two indexes are built first with CREATE INDEX CONCURRENTLY; migrate keeps
    /// them.
    @Test("022's ledger indexes built beforehand with CREATE INDEX CONCURRENTLY, as docs/sql.md shows, are kept by migrate")
    func reconciliationIndexesBuiltConcurrently() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        _ = try db.query("DROP INDEX receipt_transactions_sale_day, receipt_transactions_refund_day")
        _ = try db.query("DELETE FROM receipt_schema_migrations WHERE version = '022_reconciliation_indexes'")
        let statements = try Self.concurrentIndexStatements(on: "receipt_transactions")
        #expect(statements.count == 2)
        for statement in statements { _ = try db.query(statement) }

        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let applied = try migrator.migrate(db)
        #expect(applied.filter { name in migrator.migrations.contains { $0.name == name } } == ["022_reconciliation_indexes"])
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        #expect(try Self.catalog(db) == Self.catalog(fresh))
    }

    /// The `CREATE INDEX CONCURRENTLY IF NOT EXISTS` statements docs/sql.md gives for one table.
    /// docs/sql.md: 025's indexes for explain, built beforehand with CREATE INDEX CONCURRENTLY; migrate keeps them.
    @Test("025's indexes for explain built beforehand with CREATE INDEX CONCURRENTLY, as docs/sql.md shows, are kept by migrate")
    func supportIndexesBuiltConcurrently() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let names = ["receipt_notifications_chain", "receipt_unclaimed_chain"]
        _ = try db.query("DROP INDEX " + names.joined(separator: ", "))
        _ = try db.query("DELETE FROM receipt_schema_migrations WHERE version = '025_support_indexes'")
        let statements = try ["receipt_notifications", "receipt_unclaimed"]
            .flatMap { try Self.concurrentIndexStatements(on: $0) }
            .filter { statement in names.contains { statement.contains(" \($0) ") } }
        #expect(statements.count == names.count, "\(statements)")
        for statement in statements { _ = try db.query(statement) }

        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let applied = try migrator.migrate(db)
        #expect(applied.filter { name in migrator.migrations.contains { $0.name == name } } == ["025_support_indexes"])
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        #expect(try Self.catalog(db) == Self.catalog(fresh))
    }

    /// docs/sql.md: 031's indexes for the operator's views, built beforehand with CREATE INDEX CONCURRENTLY.
    @Test("031's indexes for the operator's views built beforehand with CREATE INDEX CONCURRENTLY are kept by migrate")
    func operatorViewIndexesBuiltConcurrently() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let names = ["receipt_jobs_dead", "receipt_jobs_failed"]
        _ = try db.query("DROP INDEX " + names.joined(separator: ", "))
        _ = try db.query("DELETE FROM receipt_schema_migrations WHERE version = '031_operator_view_indexes'")
        let statements = try Self.concurrentIndexStatements(on: "receipt_jobs")
            .filter { statement in names.contains { statement.contains(" \($0) ") } }
        #expect(statements.count == names.count, "\(statements)")
        for statement in statements { _ = try db.query(statement) }

        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        let applied = try migrator.migrate(db)
        #expect(applied.filter { name in migrator.migrations.contains { $0.name == name } } == ["031_operator_view_indexes"])
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        #expect(try Self.catalog(db) == Self.catalog(fresh))
        // What the views can read: the indexes, never the whole table (the planner told to avoid a scan, which it
        // prefers on an empty table; without the indexes it has no other way).
        _ = try db.query("SET enable_seqscan = off")
        for view in ["receipt_jobs_stuck", "receipt_failures"] {
            let plan = try db.query("EXPLAIN SELECT * FROM \(view)").rows.map { $0[0] ?? "" }.joined(separator: "\n")
            #expect(!plan.contains("Seq Scan on receipt_jobs"), "\(view): \(plan)")
        }
    }

    static func concurrentIndexStatements(on table: String) throws -> [String] {
        let doc = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("docs/sql.md"), encoding: .utf8)
        return doc.components(separatedBy: "CREATE INDEX CONCURRENTLY IF NOT EXISTS ").dropFirst()
            .map { "CREATE INDEX CONCURRENTLY IF NOT EXISTS " + $0.prefix { $0 != ";" } }
            .filter { $0.contains(" ON \(table) ") || $0.contains("\n    ON \(table) ") }
    }

    @Test("psql -f sql/apply.sql gives the schema migrate gives, runs again as a no-op, and migrate accepts it")
    func byHand() throws {
        let url = try TestServer.get().emptyDatabase()
        for _ in 0..<2 {
            let psql = try Self.psql(url, file: TestServer.sqlDirectory + "/apply.sql")
            #expect(psql.status == 0, "\(psql.output)")
        }
        let db = try PostgresConnection(url)
        defer { db.close() }
        let fresh = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { fresh.close() }
        #expect(try Self.catalog(db) == Self.catalog(fresh))
        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        // The migrations recorded themselves; the definitions get their checksums now.
        #expect(try migrator.pending(db) == migrator.definitions.map(\.name))
        #expect(try migrator.migrate(db) == migrator.definitions.map(\.name))
        #expect(try db.query("SELECT count(*) AS n FROM receipt_schema_migrations WHERE checksum IS NULL")[0, "n"] == "0")
        #expect(try migrator.migrate(db).isEmpty)
    }

    @Test("a changed definition is applied again, alone; a changed migration is refused")
    func changedFiles() throws {
        let sql = try Self.copyOfSQL()
        defer { try? FileManager.default.removeItem(atPath: sql) }
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }

        let view = sql + "/views/receipt_failures.sql"
        try (try String(contentsOfFile: view, encoding: .utf8) + "-- changed\n").write(
            toFile: view, atomically: true, encoding: .utf8
        )
        #expect(try Migrator(directory: sql).pending(db) == ["views/receipt_failures.sql"])
        #expect(try Migrator(directory: sql).migrate(db) == ["views/receipt_failures.sql"])
        #expect(try Migrator(directory: sql).migrate(db).isEmpty)

        let schema = sql + "/migrations/001_schema.sql"
        try (try String(contentsOfFile: schema, encoding: .utf8) + "-- changed\n").write(
            toFile: schema, atomically: true, encoding: .utf8
        )
        let error = #expect(throws: QueueError.self) { try Migrator(directory: sql).migrate(db) }
        #expect(error?.code == .changedMigration)
        #expect(error?.message.contains("sql/migrations/001_schema.sql changed after it was applied") == true)
    }

    @Test("a migration this version does not know, or a retired one with another checksum, is refused")
    func unknownMigrations() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        _ = try db.query("INSERT INTO receipt_schema_migrations (version, checksum) VALUES ('999_future', 'x')")
        let newer = #expect(throws: QueueError.self) { try migrator.migrate(db) }
        #expect(newer?.code == .unknownMigration)
        _ = try db.query("DELETE FROM receipt_schema_migrations WHERE version = '999_future'")
        _ = try db.query("INSERT INTO receipt_schema_migrations (version, checksum) VALUES ('003_worker', 'x')")
        let modified = #expect(throws: QueueError.self) { try migrator.migrate(db) }
        #expect(modified?.code == .unknownMigration)
        let frozen = try String(contentsOfFile: Self.frozen + "/003_worker.sql", encoding: .utf8)
        _ = try db.query(
            "UPDATE receipt_schema_migrations SET checksum = encode(sha256(convert_to($1, 'UTF8')), 'hex') "
                + "WHERE version = '003_worker'",
            [frozen]
        )
        #expect(try migrator.migrate(db).isEmpty)
    }

    @Test("a failing file keeps the server's SQLSTATE, and nothing of the run is left behind")
    func failureRollsBack() throws {
        let sql = try Self.copyOfSQL()
        defer { try? FileManager.default.removeItem(atPath: sql) }
        try "CREATE TABLE receipt_migration_probe (id integer);\n".write(
            toFile: sql + "/migrations/900_probe.sql", atomically: true, encoding: .utf8
        )
        try "CREATE OR REPLACE FUNCTION receipt_broken() RETURNS integer LANGUAGE sql AS $$ SELEC 1 $$;\n".write(
            toFile: sql + "/functions/receipt_broken.sql", atomically: true, encoding: .utf8
        )
        let manifest = sql + "/apply.sql"
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        // Unlisted files are refused before anything runs.
        let unlisted = #expect(throws: QueueError.self) { try Migrator(directory: sql) }
        #expect(unlisted?.code == .sqlFiles)
        text = text.replacingOccurrences(
            of: "\n\\ir functions/receipt_input_problem.sql",
            with: "\\ir migrations/900_probe.sql\n\n\\ir functions/receipt_broken.sql\n\\ir functions/receipt_input_problem.sql"
        )
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)

        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        let error = #expect(throws: QueueError.self) { try Migrator(directory: sql).migrate(db) }
        #expect(error?.code == .migrationFailed)
        #expect(error?.sqlState == "42601")
        #expect(error?.message == "sql/functions/receipt_broken.sql failed")
        #expect(try db.query("SELECT to_regclass('receipt_migration_probe') IS NULL AS gone")[0, "gone"] == "t")
        #expect(try db.query("SELECT count(*) AS n FROM receipt_schema_migrations WHERE version = '900_probe'")[0, "n"] == "0")
    }

    @Test("two migrate runs at once on a new database: each file applied once, both succeed")
    func concurrentMigrate() throws {
        let url = try TestServer.get().emptyDatabase()
        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        // A third session holds migrate's lock, so that both runs are surely under way at once, each waiting for it.
        let holder = try PostgresConnection(url)
        defer { holder.close() }
        _ = try holder.query("SELECT pg_advisory_lock($1)", [String(Migrator.lockKey)])
        let results = Mutex<[Result<[String], any Error>]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                let result = Result { () throws -> [String] in
                    let connection = try PostgresConnection(url)
                    defer { connection.close() }
                    return try migrator.migrate(connection)
                }
                results.withLock { $0.append(result) }
            }
        }
        let waiting = """
            SELECT count(*) AS n FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """
        let deadline = Date(timeIntervalSinceNow: 60)
        while try holder.query(waiting)[0, "n"] != "2", Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(try holder.query(waiting)[0, "n"] == "2", "both runs wait for the lock")
        _ = try holder.query("SELECT pg_advisory_unlock($1)", [String(Migrator.lockKey)])
        #expect(group.wait(timeout: .now() + 120) == .success)
        let applied = try results.withLock { try $0.map { try $0.get() } }
        #expect(applied.count == 2)
        #expect(applied.contains([]))
        #expect(applied.contains(migrator.migrations.map(\.name) + migrator.definitions.map(\.name)))
    }

    /// Runs psql on `file` against `url`; returns its exit status and output.
    static func psql(_ url: String, file: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-d", url, "-f", file]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
