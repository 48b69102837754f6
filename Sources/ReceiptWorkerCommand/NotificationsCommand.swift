import ArgumentParser
import CurlHTTP
import Foundation
import Logging
import NotificationReceiver
import ThreadSupport

/// `receipt-worker notifications`: the HTTP endpoint Apple's App Store Server Notifications V2 are posted to.
struct NotificationsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Receive App Store Server Notifications V2 over HTTP and store them, until SIGTERM/SIGINT.",
        discussion: """
            Plain HTTP/1.1: put a TLS-terminating proxy in front and give Apple its https URL. A POST to any path \
            (but /healthz) with Apple's body {"signedPayload": "…"} is stored with receive_notification() and \
            answered 200 once committed (the same bytes again: 200, still one row); 400 with a one-line reason \
            for an empty body, a body that is not JSON or has no string signedPayload, or a payload that is not a \
            JWS in compact form; 413 for a body over 64 KiB; 503 when the database cannot store it, or at once \
            while NOTIFICATIONS_MAX_WAITING (256) notifications wait for the database (Apple retries). \
            GET /healthz: 200. Other methods: 405. Nothing is verified here: the workers verify and apply \
            notifications. Needs DATABASE_URL (a role with EXECUTE on receive_notification(), such as receipt_api) \
            and NOTIFICATIONS_PORT.

            Slow clients are cut off: a connection is closed without an answer when its request head is not whole \
            within NOTIFICATIONS_HEADER_TIMEOUT_SECONDS (10) of its start, its body not within \
            NOTIFICATIONS_BODY_TIMEOUT_SECONDS (30) of the head, or, kept alive, no next request starts within \
            NOTIFICATIONS_IDLE_TIMEOUT_SECONDS (60). At most NOTIFICATIONS_MAX_CONNECTIONS (4096, or the open-files \
            limit less 64 when that is lower) connections are open at once; one more is closed at once, and a \
            warning says so at most once a minute. The soft open-files limit is raised to the hard one at start.

            `receipt-worker notifications test` checks the whole path: Apple sends a TEST notification, the receiver \
            stores it, a worker applies it.
            """,
        subcommands: [NotificationsTestCommand.self]
    )

    @Option(help: "The port to listen on (NOTIFICATIONS_PORT; required; 0 picks a free one, logged on start).")
    var notificationsPort: Int?

    @Option(help: "The address to listen on (NOTIFICATIONS_HOST). Default: 0.0.0.0.")
    var notificationsHost: String?

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let settings = Settings()
        try logging.bootstrap(settings)
        let logger = Logger(label: "receipt-worker.notifications")
        let stopRequested = ConditionLock(false)
        let signals = try SignalHandlers([SIGTERM, SIGINT]) { signal in
            logger.notice("signal received", metadata: ["signal": "\(signal)"])
            stopRequested.withLock { $0 = true }
        }
        defer { signals.cancel() }
        try settings.requireAll([
            { try settings.databaseURL(as: .api) }, { try settings.notificationsPort(notificationsPort) },
        ])
        // Each connection holds a descriptor: the soft limit (often 1,024) would end accepting long before the cap.
        let openFiles = OpenFileLimit.raiseToHardLimit()
        let maxConnections = try settings.notificationsMaxConnections(openFiles: openFiles)
        if maxConnections.lowered {
            logger.warning(
                "the open-files limit allows fewer connections than NOTIFICATIONS_MAX_CONNECTIONS' default",
                metadata: [
                    "open_files": "\(openFiles)", "max_connections": "\(maxConnections.value)",
                    "default": "\(Settings.defaultNotificationsMaxConnections)",
                ]
            )
        }
        let configuration = NotificationReceiverConfiguration(
            host: settings.string("NOTIFICATIONS_HOST", flag: notificationsHost, default: "0.0.0.0"),
            port: try settings.notificationsPort(notificationsPort),
            databaseURL: try settings.databaseURL(as: .api),
            maxWaiting: try settings.integer("NOTIFICATIONS_MAX_WAITING", flag: nil, default: 256, minimum: 1),
            headerTimeout: try settings.timeout("NOTIFICATIONS_HEADER_TIMEOUT_SECONDS", default: 10),
            bodyTimeout: try settings.timeout("NOTIFICATIONS_BODY_TIMEOUT_SECONDS", default: 30),
            idleTimeout: try settings.timeout("NOTIFICATIONS_IDLE_TIMEOUT_SECONDS", default: 60),
            maxConnections: maxConnections.value
        )
        let receiver: NotificationReceiver
        do {
            receiver = try NotificationReceiver.start(configuration, logger: logger)
        } catch {
            throw CommandFailure("\(error)")
        }
        stopRequested.wait(until: { $0 })
        receiver.stop()
    }
}

extension Settings {
    static let defaultNotificationsMaxConnections = 4096
    /// Files the receiver needs besides its connections: the listening socket, database connections, the
    /// libraries' own.
    static let notificationsOtherFiles = 64

    /// NOTIFICATIONS_MAX_CONNECTIONS: at least 1, and at most `openFiles` less the receiver's other files. Unset, 4096,
    /// or what the limit allows when that is fewer (`lowered`).
    func notificationsMaxConnections(openFiles: Int) throws -> (value: Int, lowered: Bool) {
        let allowed = openFiles - Self.notificationsOtherFiles
        let fix = "raise the limit (LimitNOFILE= in the systemd unit, ulimit -n, the container runtime's nofile limit)"
        guard !(environment["NOTIFICATIONS_MAX_CONNECTIONS"] ?? "").isEmpty else {
            guard allowed >= 1 else {
                throw ConfigurationError(
                    .resourceLimit,
                    "the receiver needs more than \(Self.notificationsOtherFiles) open files, and this process may "
                        + "open \(openFiles) (its hard limit): \(fix)"
                )
            }
            let lowered = allowed < Self.defaultNotificationsMaxConnections
            return (lowered ? allowed : Self.defaultNotificationsMaxConnections, lowered)
        }
        let value = try integer(
            "NOTIFICATIONS_MAX_CONNECTIONS", flag: nil, default: Self.defaultNotificationsMaxConnections, minimum: 1
        )
        guard value <= allowed else {
            let files = value > Int.max - Self.notificationsOtherFiles ? Int.max : value + Self.notificationsOtherFiles
            throw ConfigurationError(
                .resourceLimit,
                "NOTIFICATIONS_MAX_CONNECTIONS \(value) needs about \(files) open files (a descriptor per connection), "
                    + "and this process may open \(openFiles) (its hard limit): lower NOTIFICATIONS_MAX_CONNECTIONS, "
                    + "or \(fix)"
            )
        }
        return (value, false)
    }

    /// A timeout in seconds (at least 0.1, at most a day), unset: `value`.
    func timeout(_ name: String, default value: Double) throws -> Duration {
        let seconds = try number(name, flag: nil, default: value, minimum: 0.1)
        guard seconds <= 86_400, let milliseconds = Int64(exactly: (seconds * 1000).rounded()) else {
            throw ConfigurationError(.outOfRange, "\(name) must be at most 86400 (a day), got \(seconds)")
        }
        return .milliseconds(milliseconds)
    }

    /// NOTIFICATIONS_PORT (or its flag): required, 0…65535.
    func notificationsPort(_ flag: Int?) throws -> Int {
        guard flag != nil || !(environment["NOTIFICATIONS_PORT"] ?? "").isEmpty else {
            throw ConfigurationError(
                .missing,
                "NOTIFICATIONS_PORT is not set: set it (or --notifications-port) to the port Apple's notifications "
                    + "reach through your proxy, e.g. 8088"
            )
        }
        let port = try integer("NOTIFICATIONS_PORT", flag: flag, default: 0, minimum: 0)
        guard port <= 65_535 else {
            throw ConfigurationError(.outOfRange, "NOTIFICATIONS_PORT must be at most 65535, got \(port)")
        }
        return port
    }
}
