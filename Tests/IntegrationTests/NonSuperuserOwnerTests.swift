#if os(Linux)
import Foundation
import PostgresClient
import ReceiptQueue
import Testing

/// The schema's owner need not be a superuser: the SECURITY DEFINER functions run with their owner's rights, so a
/// dedicated owner role limits what a mistake in them can cost to that role's rights (docs/security.md). PostgreSQL 15
/// lets only a superuser create a function whose SET clause names a custom parameter, so no definition may carry one.
@Suite("migrate and roles.sql as a schema owner that is not a superuser")
struct NonSuperuserOwnerTests {
    @Test("a login with CREATEROLE that owns the database migrates it and applies roles.sql")
    func ownerWithoutSuperuser() throws {
        let adminURL = try TestServer.get().emptyDatabase()
        let admin = try PostgresConnection(adminURL)
        defer { admin.close() }
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let owner = "rw_owner_\(suffix)"
        let database = "rw_owned_\(suffix)"
        try admin.execute("CREATE ROLE \(quoteIdentifier(owner)) LOGIN CREATEROLE NOSUPERUSER")
        try admin.execute("CREATE DATABASE \(quoteIdentifier(database)) OWNER \(quoteIdentifier(owner))")
        let ownerURL = ConnectionString.replacingDatabase(in: adminURL, with: database)
            .replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://\(owner)@")

        let connection = try PostgresConnection(ownerURL)
        defer { connection.close() }
        #expect(try connection.query("SELECT rolsuper::text AS s FROM pg_roles WHERE rolname = current_user")[0, "s"]
            == "false")
        try Migrator(directory: TestServer.sqlDirectory).migrate(connection)
        let roles = try MigrationTests.psql(
            ownerURL, file: TestServer.repositoryRoot.appendingPathComponent("deploy/sql/roles.sql").path
        )
        #expect(roles.status == 0, "psql -f deploy/sql/roles.sql: \(roles.output)")
        let owners = try connection.query(
            """
            SELECT DISTINCT pg_get_userbyid(p.proowner) AS owner FROM pg_proc p
            JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
            """
        )
        #expect(owners.rows.map { $0[0] } == [owner])
    }
}
#endif
