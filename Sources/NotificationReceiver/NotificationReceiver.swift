import HTTPServing
import Logging

/// `receipt-worker notifications`: takes in App Store Server Notifications V2 as Apple posts them, over plain
/// HTTP/1.1 (TLS ends at a proxy in front), and stores each with `receive_notification()`, answering 200 only once
/// it is committed. Verifying and applying them is the workers' part. See ``NotificationHandler`` for the answers.
///
/// ```swift
/// let receiver = try NotificationReceiver.start(.init(port: 8443, databaseURL: url))
/// defer { receiver.stop() }
/// ```
public final class NotificationReceiver: Sendable {
    /// The port listened on (the ephemeral one when 0 was asked for).
    public var port: Int { server.port }
    public var host: String { server.host }
    private let server: HTTPServer
    private let store: NotificationStore
    private let shutdownGrace: Duration
    private let logger: Logger

    private init(server: HTTPServer, store: NotificationStore, shutdownGrace: Duration, logger: Logger) {
        self.server = server
        self.store = store
        self.shutdownGrace = shutdownGrace
        self.logger = logger
    }

    /// Binds and starts serving; the database is first asked when a notification arrives. Call `stop()` when done.
    /// - Throws: ``HTTPServerError`` when a setting is out of range or the address cannot be bound.
    public static func start(
        _ configuration: NotificationReceiverConfiguration,
        logger: Logger = Logger(label: "receipt-worker.notifications")
    ) throws(HTTPServerError) -> NotificationReceiver {
        guard configuration.maxBodyBytes >= 1, configuration.databaseConnections >= 1, configuration.maxWaiting >= 1
        else {
            throw HTTPServerError(
                .invalidConfiguration, "the body limit, database connections and notifications waiting must be at least 1"
            )
        }
        let store = NotificationStore(
            databaseURL: configuration.databaseURL, connections: configuration.databaseConnections,
            maxWaiting: configuration.maxWaiting
        )
        let maxBodyBytes = configuration.maxBodyBytes
        let server = try HTTPServer.start(
            host: configuration.host, port: configuration.port, threads: configuration.eventLoopThreads, backlog: 256,
            limits: HTTPServerLimits(
                headerTimeout: configuration.headerTimeout, bodyTimeout: configuration.bodyTimeout,
                idleTimeout: configuration.idleTimeout, maxConnections: configuration.maxConnections
            ),
            purpose: "receive notifications", settings: ("NOTIFICATIONS_HOST", "NOTIFICATIONS_PORT"), logger: logger,
            makeHandler: { NotificationHandler(store: store, maxBodyBytes: maxBodyBytes, logger: logger) }
        )
        let receiver = NotificationReceiver(
            server: server, store: store, shutdownGrace: configuration.shutdownGrace, logger: logger
        )
        logger.notice(
            "receiving App Store Server Notifications",
            metadata: [
                "host": "\(configuration.host)", "port": "\(receiver.port)",
                "max_connections": "\(configuration.maxConnections)",
            ]
        )
        return receiver
    }

    /// Stops accepting connections, gives notifications already handed to the database up to the shutdown grace to
    /// be committed and answered, then closes the connections and stops the event loops. Idempotent; blocks, so
    /// call it from outside the receiver's event loops.
    public func stop() {
        let stopped = server.stop {
            if !store.waitForInFlight(timeout: shutdownGrace) {
                logger.warning("notifications still waiting on the database at shutdown: Apple will deliver them again")
            }
        }
        guard stopped else { return }
        store.close()
        logger.notice("notification receiver stopped", metadata: ["port": "\(port)"])
    }
}
