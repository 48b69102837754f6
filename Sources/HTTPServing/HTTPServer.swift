import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A plain HTTP/1.1 server on its own event loops, each connection's requests ending at a handler made for it:
/// what the operations port (`METRICS_PORT`) and the notification receiver (`NOTIFICATIONS_PORT`) share. Slow or
/// silent clients are cut off and the connections open at once capped (``HTTPServerLimits``).
///
/// ```swift
/// let server = try HTTPServer.start(
///     host: "0.0.0.0", port: 9464, purpose: "serve metrics", settings: ("METRICS_HOST", "METRICS_PORT"),
///     makeHandler: { MyHandler() }
/// )
/// defer { server.stop() }
/// ```
public final class HTTPServer: Sendable {
    /// The port listened on (the ephemeral one when 0 was asked for).
    public let port: Int
    public let host: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let stopped = Mutex(false)

    private init(port: Int, host: String, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.port = port
        self.host = host
        self.group = group
        self.channel = channel
    }

    /// Binds `host`:`port` and starts serving on `threads` event loops; `makeHandler` runs on a connection's event
    /// loop for each new connection. `limits` bound each connection's time and the number open (see
    /// ``HTTPServerLimits``). `purpose` ("serve metrics") and `settings` (the names of the host and port settings)
    /// make the error messages and warnings say what to fix.
    /// - Throws: ``HTTPServerError`` when the port is out of range, `threads` is under 1, a limit is out of range, or
    ///   the address cannot be bound.
    public static func start(
        host: String,
        port: Int,
        threads: Int = 1,
        backlog: Int32 = 64,
        limits: HTTPServerLimits = HTTPServerLimits(),
        purpose: String,
        settings: (host: String, port: String),
        logger: Logger = Logger(label: "receipt-worker.http"),
        makeHandler: @escaping @Sendable () -> any ChannelHandler
    ) throws(HTTPServerError) -> HTTPServer {
        guard (0...65_535).contains(port) else {
            throw HTTPServerError(.invalidConfiguration, "\(settings.port) must be in 0…65535, got \(port)")
        }
        guard threads >= 1 else {
            throw HTTPServerError(.invalidConfiguration, "event loop threads must be at least 1, got \(threads)")
        }
        let timeouts = try limits.checked(settings: settings.port)
        let open = OpenConnections()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: backlog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // A failed accept (EMFILE: out of descriptors) would otherwise be retried at once, for ever.
                    try channel.pipeline.syncOperations.addHandler(
                        AcceptPauseHandler(pause: .milliseconds(100), purpose: purpose, logger: logger)
                    )
                    try channel.pipeline.syncOperations.addHandler(
                        ConnectionCapHandler(
                            open: open, maxConnections: limits.maxConnections, purpose: purpose, logger: logger
                        )
                    )
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        ConnectionTimeoutHandler(
                            header: timeouts.header, body: timeouts.body, idle: timeouts.idle, logger: logger
                        )
                    )
                    try channel.pipeline.syncOperations.addHandler(makeHandler())
                }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw HTTPServerError(
                .bindFailed, "cannot \(purpose) on \(host):\(port) (\(settings.host), \(settings.port)): \(error)"
            )
        }
        return HTTPServer(port: channel.localAddress?.port ?? port, host: host, group: group, channel: channel)
    }

    /// Closes the listening socket, runs `beforeShutdown` (connections still open may finish meanwhile), then closes
    /// the connections and stops the event loops. Idempotent (`beforeShutdown` runs once); blocks, so call it from
    /// outside the server's event loops. Returns false when the server was stopped already.
    @discardableResult
    public func stop(beforeShutdown: () -> Void = {}) -> Bool {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return false }
        try? channel.close().wait()
        beforeShutdown()
        try? group.syncShutdownGracefully()
        return true
    }
}

/// An HTTP server could not start; the message names the setting to fix.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// A setting is outside what it allows (the port, a count, a limit).
        case invalidConfiguration
        /// The address could not be bound (in use, not local, …).
        case bindFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
