import ArgumentParser
import ConsoleOutput
import CurlHTTP
import Foundation
import ReceiptQueue

@main
struct ReceiptWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt-worker",
        abstract: "Verifies Apple In-App Purchase receipts from a PostgreSQL queue, exactly once.",
        discussion: """
            Configuration comes from the environment (DATABASE_URL, APPLE_SHARED_SECRET or \
            APPLE_SHARED_SECRET_FILE, APPLE_BUNDLE_IDS, …); a flag overrides its variable. \
            See docs/configuration.md for the full list.

            Exit status: 0 success; 1 the command failed (a database that cannot be reached, a statement refused); \
            2 configuration error (a setting missing or invalid, or a database that refuses the connection for \
            good: no such database, authentication failed, no pg_hba.conf entry); 3 the database has no \
            receipt-worker schema, or an older one: run `receipt-worker migrate`; 4 (enqueue) the job was made and \
            rejected at once; 64 usage error. `reconcile`: 1 differences found, 3 also when Apple's report is not \
            ready yet. `explain`: 3 nothing found. `refunds`: 3 Apple does not know the transaction id. `app-transaction`: 3 no such app transaction. `notifications \
            test`: the step that failed, 5 to 8 (its help).
            """,
        version: Version.current,
        subcommands: [
            MigrateCommand.self, WorkCommand.self, SweepCommand.self, EnqueueCommand.self, StatusCommand.self,
            RequeueCommand.self, LookupOrderCommand.self, NotificationsCommand.self, NotificationsReplayCommand.self,
            FakeAppStoreCommand.self, DemoCommand.self, BenchCommand.self, SubscriptionsRefreshCommand.self,
            ReconcileCommand.self, ExplainCommand.self, SetAccountTokenCommand.self, ExtendRenewalCommand.self, RefundsCommand.self,
            AppTransactionCommand.self,
        ]
    )

    static func main() {
        // SIGTERM/SIGINT are held (blocked, pending) from the process's first code on (CSignals, `.preinit_array`)
        // until a command that handles them has its handlers in place, so a signal at any moment of start-up stops
        // `work` cleanly. Other commands get the default action back at once.
        CurlGlobal.initialize()
        do {
            var command = try parseAsRoot()
            if !(command is HandlesTerminationSignals) { SignalHandlers.releaseTerminationSignals() }
            try command.run()
        } catch let error as ConfigurationError {
            flushStandardOutput()  // what the command printed comes before its error, also in a file
            // Spelled as ArgumentParser spells the errors of exit 1 and 64.
            printError(error)
            Foundation.exit(2)
        } catch let error as SchemaProblem {
            flushStandardOutput()
            printError(error)
            Foundation.exit(SchemaProblem.exitStatus)
        } catch let error as CommandFailure {
            flushStandardOutput()
            printError(error)
            Foundation.exit(1)
        } catch {
            flushStandardOutput()
            // As `exit(withError:)` would print it (usage and help included), what it quotes from outside (a
            // server's message, an answer) made safe for a terminal.
            let code = exitCode(for: error)
            let message = TerminalText.message(fullMessage(for: error))
            if !message.isEmpty {
                let output = code.isSuccess ? FileHandle.standardOutput : FileHandle.standardError
                output.write(Data((message + "\n").utf8))
            }
            Foundation.exit(code.rawValue)
        }
    }
}

/// Logging options every long-running command takes.
struct LoggingOptions: ParsableArguments {
    @Option(help: "text or json (LOG_FORMAT). Default: text.")
    var logFormat: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (LOG_LEVEL). Default: info.")
    var logLevel: String?

    func bootstrap(_ settings: Settings) throws {
        try LogSetup.bootstrap(
            format: settings.string("LOG_FORMAT", flag: logFormat, default: "text"),
            level: settings.string("LOG_LEVEL", flag: logLevel, default: "info")
        )
    }
}

extension SchemaProblem {
    /// The exit status of a command that found the schema missing or older than this build.
    static let exitStatus: Int32 = 3
}

/// "Error: …" on standard error, what the message quotes from outside (a file's line, Apple's answer, a database
/// row) made safe for a terminal.
private func printError(_ error: some Error) {
    FileHandle.standardError.write(Data("Error: \(TerminalText.message(String(describing: error)))\n".utf8))
}

/// A failure that is not configuration: printed as one line; exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A command that installs `SignalHandlers` for SIGTERM and SIGINT (which releases the signals held at start-up).
protocol HandlesTerminationSignals {}

extension WorkCommand: HandlesTerminationSignals {}
extension SweepCommand: HandlesTerminationSignals {}
extension DemoCommand: HandlesTerminationSignals {}
extension FakeAppStoreCommand: HandlesTerminationSignals {}
extension NotificationsCommand: HandlesTerminationSignals {}
