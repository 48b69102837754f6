import ArgumentParser
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
            """
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
        let configuration = NotificationReceiverConfiguration(
            host: settings.string("NOTIFICATIONS_HOST", flag: notificationsHost, default: "0.0.0.0"),
            port: try settings.notificationsPort(notificationsPort),
            databaseURL: try settings.databaseURL(as: .api),
            maxWaiting: try settings.integer("NOTIFICATIONS_MAX_WAITING", flag: nil, default: 256, minimum: 1)
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
