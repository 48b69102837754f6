import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

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
    public let port: Int
    public let host: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let store: NotificationStore
    private let shutdownGrace: Duration
    private let logger: Logger
    private let stopped = Mutex(false)

    private init(
        port: Int, host: String, group: MultiThreadedEventLoopGroup, channel: any Channel, store: NotificationStore,
        shutdownGrace: Duration, logger: Logger
    ) {
        self.port = port
        self.host = host
        self.group = group
        self.channel = channel
        self.store = store
        self.shutdownGrace = shutdownGrace
        self.logger = logger
    }

    /// Binds and starts serving; the database is first asked when a notification arrives. Call `stop()` when done.
    /// - Throws: ``NotificationReceiverError`` when a setting is out of range or the address cannot be bound.
    public static func start(
        _ configuration: NotificationReceiverConfiguration,
        logger: Logger = Logger(label: "receipt-worker.notifications")
    ) throws(NotificationReceiverError) -> NotificationReceiver {
        guard (0...65_535).contains(configuration.port) else {
            throw NotificationReceiverError(
                .invalidConfiguration, "NOTIFICATIONS_PORT must be in 0…65535, got \(configuration.port)"
            )
        }
        guard configuration.maxBodyBytes >= 1, configuration.databaseConnections >= 1,
            configuration.eventLoopThreads >= 1, configuration.maxWaiting >= 1
        else {
            throw NotificationReceiverError(
                .invalidConfiguration,
                "the body limit, database connections, notifications waiting and event loop threads must be at least 1"
            )
        }
        let store = NotificationStore(
            databaseURL: configuration.databaseURL, connections: configuration.databaseConnections,
            maxWaiting: configuration.maxWaiting
        )
        let maxBodyBytes = configuration.maxBodyBytes
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.eventLoopThreads)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        NotificationHandler(store: store, maxBodyBytes: maxBodyBytes, logger: logger)
                    )
                }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw NotificationReceiverError(
                .bindFailed,
                "cannot receive notifications on \(configuration.host):\(configuration.port) "
                    + "(NOTIFICATIONS_HOST, NOTIFICATIONS_PORT): \(error)"
            )
        }
        let receiver = NotificationReceiver(
            port: channel.localAddress?.port ?? configuration.port, host: configuration.host, group: group,
            channel: channel, store: store, shutdownGrace: configuration.shutdownGrace, logger: logger
        )
        logger.notice(
            "receiving App Store Server Notifications",
            metadata: ["host": "\(configuration.host)", "port": "\(receiver.port)"]
        )
        return receiver
    }

    /// Stops accepting connections, gives notifications already handed to the database up to the shutdown grace to
    /// be committed and answered, then closes the connections and stops the event loops. Idempotent; blocks, so
    /// call it from outside the receiver's event loops.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        try? channel.close().wait()
        if !store.waitForInFlight(timeout: shutdownGrace) {
            logger.warning("notifications still waiting on the database at shutdown: Apple will deliver them again")
        }
        try? group.syncShutdownGracefully()
        store.close()
        logger.notice("notification receiver stopped", metadata: ["port": "\(port)"])
    }
}
