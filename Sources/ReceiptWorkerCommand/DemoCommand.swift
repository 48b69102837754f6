import ArgumentParser
import ConsoleOutput
import Demo
import Foundation
import PostgresClient
import ThreadSupport

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline on sample receipts: PostgreSQL, a fake App Store, a worker, the verdicts.",
        discussion: """
            Without DATABASE_URL the demo starts a temporary PostgreSQL cluster (needs initdb and pg_ctl: \
            apt-get install -y postgresql) and deletes it afterwards; with DATABASE_URL it migrates and uses that \
            database, and leaves the demo's jobs and ledger rows in it. The fake App Store runs in this process on \
            a free loopback port. Sample orders show every outcome: verified in production and in the sandbox, a \
            replayed receipt, a refund, a wrong product, another app's receipt, Apple failing three times, an \
            expired subscription and a receipt that is not base64. Everything started is stopped again at the end, \
            on an error, and on Ctrl-C.
            """
    )

    @Flag(help: "After the tables, keep PostgreSQL and the fake App Store running until Ctrl-C, to look around.")
    var keep = false

    @Option(name: .customLong("apple-latency-ms"), help: "The fake App Store's delay before each answer.")
    var appleLatencyMs = 300

    @Option(name: .customLong("apple-jitter-ms"), help: "Random extra delay, 0…N ms, added to each answer.")
    var appleJitterMs = 200

    @Option(help: "Give up when the jobs are not all final after this many seconds.")
    var timeout: Double = 120

    @Option(help: "The directory of the SQL files (RECEIPT_WORKER_SQL_DIR). Default: found beside the binary.")
    var sqlDir: String?

    func validate() throws {
        guard appleLatencyMs >= 0, appleJitterMs >= 0 else {
            throw ValidationError("--apple-latency-ms and --apple-jitter-ms must not be negative")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let settings = Settings()
        // Warnings and errors only: the demo's own output is the point.
        try LogSetup.bootstrap(format: settings.string("LOG_FORMAT", flag: nil, default: "text"), level: "warning")
        let stopRequested = ConditionLock(false)
        let signals = try SignalHandlers([SIGTERM, SIGINT]) { _ in
            let first = stopRequested.withLock { requested in
                defer { requested = true }
                return !requested
            }
            if first {
                flushStandardOutput()
                FileHandle.standardError.write(Data("\nstopping and cleaning up…\n".utf8))
            }
        }
        defer { signals.cancel() }

        let options = DemoOptions(
            keep: keep, appleLatencyMs: appleLatencyMs, appleJitterMs: appleJitterMs, timeoutSeconds: timeout,
            sqlDirectory: sqlDir, databaseURL: settings.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 },
            environment: settings.environment
        )
        // A DATABASE_URL left exported from earlier work (scripts/demo.sh passes it on) points the demo at a
        // database that may be gone: say how to get the temporary cluster instead.
        let external = options.databaseURL != nil
        let open: (String) throws -> PostgresConnection = { url in
            do {
                return try connect(url)
            } catch let failure as CommandFailure where external {
                throw CommandFailure(failure.description + Self.unsetHint)
            } catch let error as ConfigurationError where external {
                throw ConfigurationError(error.code, error.message + Self.unsetHint)
            }
        }
        do {
            try DemoRun(options: options, stopRequested: stopRequested, connect: open).run()
        } catch where stopRequested.withLock({ $0 }) {
            throw ExitCode(130)
        }
    }

    static let unsetHint =
        "\nThe demo uses DATABASE_URL because it is set; unset it (unset DATABASE_URL) and the demo runs on a "
        + "temporary PostgreSQL cluster of its own."
}
