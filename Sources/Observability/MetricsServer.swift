import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

import class Prometheus.PrometheusCollectorRegistry

/// The operations port (`METRICS_PORT`): an HTTP/1.1 server on one event loop thread.
///
/// - `GET /metrics`: the registry in Prometheus text format (`beforeScrape` runs first, to sample gauges);
/// - `GET /healthz`: 200 while the process runs (liveness);
/// - `GET /readyz`: 200 when `readiness` says so, else 503 with its one-line reason (readiness).
///
/// ```swift
/// let server = try MetricsServer.start(host: "0.0.0.0", port: 9464, registry: metrics.registry, readiness: probe)
/// defer { server.stop() }
/// ```
public final class MetricsServer: Sendable {
    /// The port listened on (the ephemeral one when 0 was asked for).
    public let port: Int
    public let host: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let logger: Logger
    private let stopped = Mutex(false)

    private init(port: Int, host: String, group: MultiThreadedEventLoopGroup, channel: any Channel, logger: Logger) {
        self.port = port
        self.host = host
        self.group = group
        self.channel = channel
        self.logger = logger
    }

    /// Binds and starts serving. Call `stop()` when done.
    /// - Throws: ``MetricsServerError`` when the port is out of range or cannot be bound.
    public static func start(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        readiness: ReadinessProbe,
        beforeScrape: @escaping @Sendable () -> Void = {},
        logger: Logger = Logger(label: "receipt-worker.metrics")
    ) throws(MetricsServerError) -> MetricsServer {
        guard (0...65_535).contains(port) else {
            throw MetricsServerError(.invalidPort, "METRICS_PORT must be in 0…65535, got \(port)")
        }
        let routes = OperationsRoutes(registry: registry, readiness: readiness, beforeScrape: beforeScrape)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(OperationsHandler(routes: routes, logger: logger))
                }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw MetricsServerError(
                .bindFailed,
                "cannot serve metrics on \(host):\(port) (METRICS_HOST, METRICS_PORT): \(error)"
            )
        }
        let server = MetricsServer(
            port: channel.localAddress?.port ?? port, host: host, group: group, channel: channel, logger: logger
        )
        logger.info(
            "serving /metrics, /healthz and /readyz", metadata: ["host": "\(host)", "port": "\(server.port)"]
        )
        return server
    }

    /// Closes the listening socket and the open connections, and stops the event loop thread. Idempotent; blocks,
    /// so call it from outside the server's event loop.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
        logger.debug("metrics server stopped", metadata: ["port": "\(port)"])
    }
}
