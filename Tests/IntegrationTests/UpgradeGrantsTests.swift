#if os(Linux)
import Foundation
import Testing

/// The one case an upgrade still gives `permission denied` (docs/operations.md, Troubleshooting): a SECURITY DEFINER
/// function the new version added or re-created is callable by nobody until deploy/sql/roles.sql runs again. `migrate`
/// names it and the fix.
@Suite("migrate names the functions no role may call yet after an upgrade", .serialized, .ownThread)
struct UpgradeGrantsTests {
    static func migrate(_ world: ProcessWorld) async throws -> ChildProcess {
        let child = try ChildProcess(
            ["migrate"], environment: ChildProcess.environment(setting: [
                "DATABASE_URL": world.databaseURL, "RECEIPT_WORKER_SQL_DIR": TestServer.sqlDirectory,
            ]), separateErrors: true
        )
        #expect(await child.exit(within: 120) == 0, "\(child.output) \(child.errors)")
        return child
    }

    @Test("A definer re-created without its grant: migrate warns naming it and roles.sql, the worker login is refused until roles.sql runs")
    func ungrantedDefinerNamed() async throws {
        let world = try RolesTests.worldWithRoles()
        let quiet = try await Self.migrate(world)
        #expect(!quiet.errors.contains("no role may call"), "\(quiet.errors)")

        // As after an upgrade that re-created receipt_prune under a new signature: the new function holds no grant.
        let prune = try #require(
            try world.query("SELECT oid::regprocedure::text FROM pg_proc WHERE proname = 'receipt_prune'").rows.first?.first ?? nil
        )
        try world.query("REVOKE EXECUTE ON FUNCTION \(prune) FROM receipt_worker")
        let mayCall = "SELECT has_function_privilege('worker_login', $1, 'EXECUTE')::text"
        #expect(try world.query(mayCall, [prune]).rows.first?.first == "false")
        let warned = try await Self.migrate(world)
        let line = warned.errors.split(separator: "\n").first { $0.contains("no role may call") }.map(String.init) ?? ""
        #expect(line.contains(prune) && line.contains("deploy/sql/roles.sql"), "\(warned.errors)")

        let applied = try MigrationTests.psql(
            world.databaseURL, file: TestServer.repositoryRoot.appendingPathComponent("deploy/sql/roles.sql").path
        )
        try #require(applied.status == 0, "\(applied.output)")
        #expect(try world.query(mayCall, [prune]).rows.first?.first == "true")
        let after = try await Self.migrate(world)
        #expect(!after.errors.contains("no role may call"), "\(after.errors)")
    }
}
#endif
