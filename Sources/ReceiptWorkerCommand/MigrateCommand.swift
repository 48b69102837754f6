import ArgumentParser
import ConsoleOutput
import Foundation
import PostgresClient
import ReceiptQueue

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the SQL migrations not applied yet and the changed definitions (sql/apply.sql), and register APPLE_BUNDLE_IDS (with APPSTORE_APP_APPLE_IDS).",
        discussion: """
            Each file runs once, in order, in its own transaction, under an advisory lock. The objects are created in \
            schema public (a connection whose search_path creates elsewhere is refused). Warns on standard error while \
            a role other than the owner may create objects in schema public (REVOKE CREATE ON SCHEMA public FROM \
            PUBLIC, or apply deploy/sql/roles.sql), and while a function it added is callable by no role yet (apply \
            deploy/sql/roles.sql again).
            """
    )

    @Option(help: "The directory of the SQL files (RECEIPT_WORKER_SQL_DIR). Default: found beside the binary.")
    var sqlDir: String?

    @Option(help: "Comma-separated bundle ids to register (APPLE_BUNDLE_IDS).")
    var bundleIds: String?

    func run() throws {
        let settings = Settings()
        let connection = try connect(try settings.databaseURL(as: .owner))
        let migrator = try Migrator(
            directory: try Migrator.locateDirectory(explicit: sqlDir, environment: settings.environment)
        )
        let applied = try migrator.migrate(connection)
        let apps = try settings.bundleIds(bundleIds)
        let store = JobStore(connection: connection)
        try store.registerApps(apps)
        try store.registerAppAppleIds(try settings.appAppleIds(bundleIds: apps))
        print("schema: " + migrator.summary(ofApplied: applied))
        if !apps.isEmpty { print("apps: \(apps.joined(separator: ", "))") }
        let warnings = [
            Migrator.schemaCreatorsWarning(try Migrator.schemaCreators(connection)),
            Migrator.ungrantedFunctionsWarning(try Migrator.ungrantedFunctions(connection)),
        ]
        for warning in warnings.compactMap({ $0 }) {
            FileHandle.standardError.write(Data("receipt-worker migrate: \(TerminalText.message(warning))\n".utf8))
        }
    }
}

/// Opens a connection, turning a failure into one clear line.
func connect(_ url: String) throws -> PostgresConnection {
    do {
        return try PostgresConnection(url)
    } catch let error as PostgresError {
        if let configurationError = DatabaseCheck.configurationError(error) { throw configurationError }
        throw CommandFailure("cannot connect to the database (DATABASE_URL): \(LogText.oneLine(error.message))")
    }
}
