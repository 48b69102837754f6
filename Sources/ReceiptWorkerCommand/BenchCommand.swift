import ArgumentParser
import Bench
import Foundation
import Logging
import ReceiptQueue

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput and latency: enqueue N receipts, verify them with one worker, report.",
        discussion: """
            Starts what it needs: a temporary PostgreSQL cluster (fsync=off, synchronous_commit=off unless \
            --fsync), migrated, and the fake App Store (in this process, or with --fake-process in a child \
            process). Enqueues --receipts scenario receipts (distinct transaction ids) through enqueue_receipt() in \
            multi-row statements, runs one worker in this process until every one is final, then, with the worker \
            idle, enqueues single jobs 5–20 ms apart to measure pickup latency. Reports the enqueue rate, verdicts \
            per second (first claim to last verdict) and second by second, enqueue → verdict percentiles \
            (finished_at − created_at), claim → written and Apple-call percentiles, idle pickup percentiles, peak \
            RSS (VmHWM), the most database connections seen, the HTTP version of the fake App Store's answers and \
            the most sockets open to it, and the CPU of this process, PostgreSQL and the machine during the run. \
            --json adds every figure as one line of JSON.

            The worker speaks HTTP/2 to the fake App Store (with prior knowledge in plain text; through ALPN with \
            --tls) over at most --max-connections connections (64), as `work` does with APPLE_HTTP_VERSION=2; \
            --http1 speaks HTTP/1.1, a connection per call in flight. --tls serves TLS with a certificate made for \
            the run, trusted as APPSTORE_CA_FILE would be.

            With DATABASE_URL set, no cluster is started: pass --scratch-database NAME to create (and drop \
            afterwards) a database on that server, or --yes-use-this-database to run in DATABASE_URL's database \
            itself (its worker would also take any other queued jobs; the bench jobs stay there). When that server \
            runs on this machine, --postgres-pid PID (its postmaster) adds PostgreSQL's CPU to the report.

            Standard runs (release build: swift build -c release):
              receipt-worker bench --apple-latency-ms 0 --receipts 100000
              receipt-worker bench --apple-latency-ms 3000 --receipts 30000 \\
                --max-in-flight 15000 --fake-process --fake-threads 2
              receipt-worker bench --apple-latency-ms 3000 --receipts 30000 \\
                --max-in-flight 30000 --tls --fake-process --fake-threads 2 \\
                --pickup-samples 0
              receipt-worker bench --notification-flood 10000
              receipt-worker bench --notifications 10000
              receipt-worker bench --notifications 10000 --rate 500 --via http
            Sockets: over HTTP/2 the calls share at most --max-connections connections (64 by default, plus 16 for \
            other hosts), however many are in flight; over HTTP/1.1 (--http1) each call in flight holds a socket. With \
            the fake App Store in this process its side holds as many again (--fake-process keeps them apart). The \
            soft RLIMIT_NOFILE is raised to the hard limit, and a run whose sockets (and 256 more files) do not fit is \
            refused, naming why. Without jitter, calls claimed together are answered together: the run goes in \
            waves of --max-in-flight jobs, each Apple's latency plus the time to write the wave.

            --notifications N signs N DID_RENEW notifications with the fake App Store's chain (each chain owned, so \
            each renewal is credited) and has one worker (NOTIFICATION_THREADS: --notification-threads) apply them: \
            without --rate all are stored first, and it reports applied per second from the worker's start; with \
            --rate R they arrive R a second, the worker running, and it reports arrival (stored, committed) → applied \
            (seen by a reader polling every 5 ms) p50/p99. --via sql stores them with receive_notification() on one \
            connection, --via http posts them to the notification receiver (in this process) over HTTP/1.1.

            --soak MINUTES keeps one worker under steady load: receipts enqueued --rate a second (200), signed \
            notifications a tenth of that (DID_RENEW and ONE_TIME_CHARGE in turn), the fake App Store answering \
            with --apple-latency-ms and --apple-jitter-ms and faults (1% HTML 503 pages, 0.5% status 21005, 0.5% \
            hangs the client gives up on after the slowest answer and 5 s). A line per minute (--soak-interval): \
            resident set, CPU per job of this process and of PostgreSQL, enqueue → verdict p50/p99, notifications \
            applied and arrival → applied p99, retries, dead. At the end: every job final and credited at most \
            once (exit 1 otherwise), and whether each series stayed flat (last quarter over first, the first \
            minute left out).
            """
    )

    @Option(help: "Receipts to enqueue and verify.")
    var receipts = 20_000
    @Option(help: "Before the run, fill the tables with this many finished jobs and their history (ledger rows, events, notifications, subscriptions), made by SQL: the figures of a database that has grown.")
    var prefill = 0
    @Option(name: .customLong("postgres-setting"), help: "Temporary cluster only: a server setting, name=value (repeatable), e.g. shared_buffers=2GB.")
    var postgresSettings: [String] = []
    @Option(name: .customLong("apple-latency-ms"), help: "The fake App Store's delay before each answer.")
    var appleLatencyMs = 0
    @Option(name: .customLong("apple-jitter-ms"), help: "Random extra delay, 0…N ms, added to each answer.")
    var appleJitterMs = 0
    @Option(help: "Apple calls in flight (MAX_IN_FLIGHT). Default: 512 at 0 ms; with latency, 3,000/s, at most 4096.")
    var maxInFlight: Int?
    @Option(help: "Most jobs per claim statement. Default: the worker's.")
    var claimBatch: Int?
    @Option(help: "Most outcomes per receipt_complete() call. Default: the worker's.")
    var writeBatch: Int?
    @Option(help: "Rows per enqueue statement.")
    var enqueueBatch = 1_000
    @Option(help: "Single jobs enqueued against the idle worker to measure pickup latency (0 skips it).")
    var pickupSamples = 200
    @Option(help: "Read the resident set again this many seconds after the last verdict, the worker idle (0 skips it).")
    var settleSeconds = 0.0
    @Flag(help: "Temporary cluster only: fsync, synchronous_commit, full_page_writes and wal_init_zero on (off by default).")
    var fsync = false
    @Option(name: .customLong("fake-threads"), help: "Event loop threads of the fake App Store.")
    var fakeThreads = 1
    @Flag(help: "Run the fake App Store in a child process (its sockets and memory apart from the worker's).")
    var fakeProcess = false
    @Option(help: "With DATABASE_URL: create this database for the run on that server, and drop it afterwards.")
    var scratchDatabase: String?
    @Flag(help: "With DATABASE_URL: run in that database itself (migrated; bench jobs and ledger rows stay).")
    var yesUseThisDatabase = false
    @Option(help: "With DATABASE_URL on this machine: the server's postmaster, to report PostgreSQL's CPU.")
    var postgresPid: Int32?
    @Option(help: "The directory of the SQL files (RECEIPT_WORKER_SQL_DIR). Default: found beside the binary.")
    var sqlDir: String?
    @Option(help: "Give up when the receipts are not all final after this many seconds.")
    var timeout: Double = 900
    @Option(help: "The worker's log level during the run (trace … critical).")
    var logLevel = "warning"
    @Flag(
        name: .customLong("signed-transactions"),
        help: "Enqueue StoreKit 2 signed transactions (JWS signed by a chain made for the run) instead of receipts."
    )
    var signedTransactions = false
    @Flag(
        help: ArgumentHelp(
            "With --signed-transactions: the fake App Store's own purchases, each confirmed with Get Transaction "
                + "Info (APPSTORE_CONFIRM=always) and verified again; no rate limit applied."
        )
    )
    var confirm = false

    @Flag(help: "The fake App Store serves TLS with a certificate made for the run (a handshake per connection).")
    var tls = false
    @Flag(help: "Speak HTTP/1.1 only (a connection per call in flight) instead of HTTP/2.")
    var http1 = false
    @Option(help: "Connections to the fake App Store at most (APPLE_MAX_CONNECTIONS). Default: 64 with HTTP/2, none with --http1.")
    var maxConnections: Int?

    @Option(help: "Pad each receipt to about this many bytes of base64, as real receipts of several KB are (PostgreSQL then stores them out of line). Default: about 350.")
    var receiptBytes: Int?
    @Flag(help: "After the table, print every figure as one line of JSON.")
    var json = false
    @Option(
        help: ArgumentHelp(
            "Instead of receipts: N forged notifications, then one genuine REFUND, through receive_notification(); "
                + "reports how long the genuine one waited."
        )
    )
    var notificationFlood: Int?
    @Option(
        help: ArgumentHelp(
            "Instead of receipts: N signed DID_RENEW notifications (the fake App Store's chain), applied by one worker; "
                + "reports applied per second and, with --rate, arrival → applied percentiles."
        )
    )
    var notifications: Int?
    @Option(help: "With --notifications: notifications arriving per second, one at a time, the worker running. Default: all stored before the worker starts. With --soak: receipts enqueued per second (default 200).")
    var rate: Double?
    @Option(help: "Instead of a drain: MINUTES of steady load (receipts at --rate, notifications at a tenth of it, Apple's faults), a line per minute; fractions allowed.")
    var soak: Double?
    @Option(name: .customLong("soak-interval"), help: "With --soak: seconds per line (60).")
    var soakInterval = 60.0
    @Option(help: "With --notifications: through receive_notification() (sql) or posted to the notification receiver (http).")
    var via: String = "sql"
    @Option(help: "With --notifications: DID_RENEW (credited renewals), TEST (Apple's test notification) or ONE_TIME_CHARGE (purchases no job names, credited to their token's customer as orders of their own).")
    var notificationType: String = "DID_RENEW"
    @Option(help: "With --notification-flood or --notifications: threads verifying notifications (NOTIFICATION_THREADS). Default: the CPU count.")
    var notificationThreads: Int?
    @Option(help: "Connections writing verdicts back, for jobs and for notifications each (WRITE_CONNECTIONS). Default: the worker's (2).")
    var writeConnections: Int?

    func run() throws {
        let settings = Settings()
        guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
            throw ConfigurationError(
                .invalid, "--log-level must be one of trace, debug, info, notice, warning, error, critical"
            )
        }
        try LogSetup.bootstrap(format: settings.string("LOG_FORMAT", flag: nil, default: "text"), level: logLevel)
        var configuration = BenchConfiguration(
            receipts: receipts,
            appleLatencyMilliseconds: appleLatencyMs,
            appleJitterMilliseconds: appleJitterMs,
            maxInFlight: maxInFlight,
            claimBatch: claimBatch,
            writeBatch: writeBatch,
            enqueueBatch: enqueueBatch,
            pickupSamples: pickupSamples,
            settleSeconds: settleSeconds,
            database: try database(settings),
            postgresPID: postgresPid,
            fsync: fsync,
            fakeAppStoreThreads: fakeThreads,
            fakeAppStoreCommand: fakeProcess ? ["/proc/self/exe", "fake-appstore"] : nil,
            sqlDirectory: try Migrator.locateDirectory(explicit: sqlDir, environment: settings.environment),
            timeoutSeconds: timeout,
            signedTransactions: signedTransactions,
            tls: tls,
            http1: http1,
            maxConnections: maxConnections,
            confirm: confirm,
            receiptBytes: receiptBytes
        )
        configuration.notificationThreads = notificationThreads
        configuration.writeConnections = writeConnections
        configuration.prefill = prefill
        for setting in postgresSettings {
            let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isLetter || $0 == "_" || $0 == "." }) else {
                throw ConfigurationError(.invalid, "--postgres-setting must be name=value (e.g. shared_buffers=2GB), got \"\(setting)\"")
            }
            configuration.postgresSettings[parts[0]] = parts[1]
        }
        let problems = configuration.problems()
        guard problems.isEmpty else { throw ConfigurationError(.invalid, problems.joined(separator: "; ")) }
        if prefill > 0 && (notificationFlood != nil || notifications != nil) {
            throw ConfigurationError(.conflict, "--prefill fills the tables for the receipts run; leave it out with --notifications")
        }
        if notificationFlood != nil && notifications != nil {
            throw ConfigurationError(.conflict, "pass either --notifications or --notification-flood, not both")
        }
        if let soak {
            guard notificationFlood == nil, notifications == nil else {
                throw ConfigurationError(.conflict, "pass --soak alone, without --notifications or --notification-flood")
            }
            try runSoak(minutes: soak, configuration: configuration, level: level)
            return
        }
        if soakInterval != 60 { throw ConfigurationError(.conflict, "--soak-interval needs --soak MINUTES") }
        if let notificationFlood {
            try runNotificationFlood(notificationFlood, configuration: configuration, level: level)
            return
        }
        if let notifications {
            try runNotifications(notifications, configuration: configuration, level: level)
            return
        }
        if rate != nil || via != "sql" || notificationType != "DID_RENEW" {
            throw ConfigurationError(.conflict, "--rate, --via and --notification-type need --notifications N")
        }
        let report: BenchReport
        do {
            report = try BenchRun(configuration: configuration, logLevel: level) { line in
                FileHandle.standardError.write(Data("bench: \(line)\n".utf8))
            }.run()
        } catch let error as BenchError {
            throw CommandFailure(error.description)
        }
        print(report.table())
        if json { print(report.json()) }
    }

    /// `--notification-flood N`.
    private func runNotificationFlood(_ forgeries: Int, configuration: BenchConfiguration, level: Logger.Level) throws {
        guard forgeries >= 1 else { throw ConfigurationError(.invalid, "--notification-flood must be at least 1") }
        let report: NotificationFloodReport
        do {
            report = try NotificationFloodRun(configuration: configuration, logLevel: level) { line in
                FileHandle.standardError.write(Data("bench: \(line)\n".utf8))
            }.run(forgeries: forgeries)
        } catch let error as BenchError {
            throw CommandFailure(error.description)
        }
        print(report.table())
        if json { print(report.json()) }
    }

    /// `--soak MINUTES [--rate R] [--soak-interval S]`.
    private func runSoak(minutes: Double, configuration: BenchConfiguration, level: Logger.Level) throws {
        let rate = self.rate ?? 200
        let problems = SoakRun.problems(minutes: minutes, rate: rate, intervalSeconds: soakInterval)
        guard problems.isEmpty else { throw ConfigurationError(.invalid, problems.joined(separator: "; ")) }
        if via != "sql" || notificationType != "DID_RENEW" {
            throw ConfigurationError(.conflict, "--via and --notification-type need --notifications N")
        }
        var run = SoakRun(configuration: configuration, logLevel: level) { line in
            FileHandle.standardError.write(Data("bench: \(line)\n".utf8))
        }
        run.intervalSeconds = soakInterval
        let report: SoakReport
        do {
            report = try run.run(minutes: minutes, rate: rate)
        } catch let error as BenchError {
            throw CommandFailure(error.description)
        }
        print(report.table())
        if json { print(report.json()) }
        guard report.checks.exactlyOnce else {
            throw CommandFailure("the soak's jobs or notifications were not each final and credited exactly once")
        }
    }

    /// `--notifications N [--rate R] [--via sql|http]`.
    private func runNotifications(_ count: Int, configuration: BenchConfiguration, level: Logger.Level) throws {
        guard count >= 1 else { throw ConfigurationError(.invalid, "--notifications must be at least 1") }
        if let rate, !(rate > 0 && rate <= 1_000_000) {
            throw ConfigurationError(.invalid, "--rate must be a number of notifications per second, above 0")
        }
        guard let path = NotificationsRun.Path(rawValue: via) else {
            throw ConfigurationError(.invalid, "--via must be sql (receive_notification()) or http (the receiver)")
        }
        let report: NotificationsReport
        do {
            report = try NotificationsRun(configuration: configuration, logLevel: level) { line in
                FileHandle.standardError.write(Data("bench: \(line)\n".utf8))
            }.run(count: count, rate: rate, via: path, type: notificationType)
        } catch let error as BenchError {
            throw CommandFailure(error.description)
        }
        print(report.table())
        if json { print(report.json()) }
    }

    private func database(_ settings: Settings) throws -> BenchConfiguration.Database {
        guard let url = settings.environment["DATABASE_URL"], !url.isEmpty else {
            if scratchDatabase != nil || yesUseThisDatabase {
                throw ConfigurationError(.missing, "--scratch-database and --yes-use-this-database need DATABASE_URL")
            }
            if postgresPid != nil {
                throw ConfigurationError(
                    .conflict, "--postgres-pid needs DATABASE_URL: the temporary cluster's CPU is reported anyway"
                )
            }
            return .temporaryCluster
        }
        if fsync {
            throw ConfigurationError(
                .conflict,
                "--fsync applies to the temporary cluster only; with DATABASE_URL the server's settings apply"
            )
        }
        switch (scratchDatabase, yesUseThisDatabase) {
        case (let name?, false):
            return .scratch(serverURL: url, name: name)
        case (nil, true):
            return .existing(url: url)
        case (_?, true):
            throw ConfigurationError(.conflict, "pass either --scratch-database or --yes-use-this-database, not both")
        case (nil, false):
            throw ConfigurationError(
                .conflict,
                "DATABASE_URL is set, and the benchmark would write thousands of jobs and ledger rows into it: pass "
                    + "--scratch-database NAME (created and dropped on that server) or --yes-use-this-database, or "
                    + "unset DATABASE_URL to use a temporary cluster"
            )
        }
    }
}
