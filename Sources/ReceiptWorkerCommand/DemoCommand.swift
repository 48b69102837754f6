import ArgumentParser
import Foundation

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
        let stop = StopFlag()
        let signals = SignalHandlers([SIGTERM, SIGINT]) { _ in
            if !stop.isSet {
                flushStandardOutput()
                FileHandle.standardError.write(Data("\nstopping and cleaning up…\n".utf8))
            }
            stop.set()
        }
        defer { signals.cancel() }

        let environment = DemoEnvironment()
        let externalURL = settings.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let outcome = Result {
            try DemoRun(command: self, settings: settings, environment: environment, stop: stop)
                .run(externalURL: externalURL)
        }
        let stopped = environment.tearDown()
        if !stopped.isEmpty { print("Cleaned up: \(stopped.joined(separator: "; ")).") }
        if stop.isSet, case .failure = outcome { throw ExitCode(130) }
        try outcome.get()
    }
}
