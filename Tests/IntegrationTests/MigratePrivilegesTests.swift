#if os(Linux)
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// `migrate` itself takes PUBLIC's EXECUTE away from receipt-worker's SECURITY DEFINER functions (sql/privileges.sql):
/// between a migrate that adds one (receipt_prune()'s new signature, receipt_reconcile()) and the next run of
/// deploy/sql/roles.sql, every role of the cluster could otherwise call it with the owner's rights. Functions that
/// run with their caller's rights stay callable, so running workers keep working through an upgrade.
@Suite("migrate: no SECURITY DEFINER function of ours executable by PUBLIC, before roles.sql runs", .serialized, .ownThread)
struct MigratePrivilegesTests {
    static func openToPublic(_ db: PostgresConnection, definers: Bool = true) throws -> [String] {
        try db.query(
            """
            SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.prosecdef = \(definers)
              AND EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                          WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
            ORDER BY 1
            """
        ).rows.map { $0[0] ?? "?" }
    }

    @Test("a new database: after migrate alone, only the definers that are not ours stay open to PUBLIC")
    func freshMigrate() throws {
        let db = try PostgresConnection(try TestServer.get().emptyDatabase())
        defer { db.close() }
        _ = try db.query("CREATE FUNCTION app_helper() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$")
        _ = try db.query("CREATE FUNCTION app_definer() RETURNS integer LANGUAGE sql SECURITY DEFINER AS $$ SELECT 1 $$")
        try Migrator(directory: TestServer.sqlDirectory).migrate(db)
        #expect(try Self.openToPublic(db) == ["app_definer()"])
        // Functions with their caller's rights: left for roles.sql (the worker's running functions call new ones).
        let invokers = try Self.openToPublic(db, definers: false)
        #expect(invokers.contains("app_helper()"))
        #expect(invokers.contains("receipt_notification_event(text,timestamp with time zone,jsonb,jsonb,jsonb)"))
        let definer = try db.query(
            "SELECT count(*) AS n FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                + "WHERE n.nspname = 'public' AND p.prosecdef"
        )[0, "n"]
        #expect(Int(definer ?? "0") ?? 0 >= 10, "the database has our SECURITY DEFINER functions")
    }

    @Test("an upgrade: a function that appeared since (a new signature, a function made by hand) is closed by migrate")
    func upgradeMigrate() throws {
        let db = try PostgresConnection(try TestServer.get().freshDatabase())
        defer { db.close() }
        _ = try db.query(
            """
            CREATE FUNCTION receipt_added_later(p integer) RETURNS integer LANGUAGE sql SECURITY DEFINER
            SET search_path = pg_catalog, public, pg_temp AS $$ SELECT p $$
            """
        )
        _ = try db.query("CREATE FUNCTION receipt_helper_added_later() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$")
        #expect(try Self.openToPublic(db) == ["receipt_added_later(integer)"])
        let migrator = try Migrator(directory: TestServer.sqlDirectory)
        #expect(try migrator.migrate(db).isEmpty, "nothing else to apply")
        #expect(try Self.openToPublic(db).isEmpty)
        #expect(try Self.openToPublic(db, definers: false).contains("receipt_helper_added_later()"))
    }

    @Test("psql -f sql/apply.sql closes them too")
    func byHand() throws {
        let url = try TestServer.get().emptyDatabase()
        let psql = try MigrationTests.psql(url, file: TestServer.sqlDirectory + "/apply.sql")
        #expect(psql.status == 0, "\(psql.output)")
        let db = try PostgresConnection(url)
        defer { db.close() }
        #expect(try Self.openToPublic(db).isEmpty)
    }
}
#endif
