import HTTPServing
import Logging

import class Prometheus.PrometheusCollectorRegistry

/// The operations port (`METRICS_PORT`): an HTTP/1.1 server on one event loop thread, with the receiver's timeouts
/// (head 10 s, body 30 s, idle 60 s) and at most ``maxConnections`` connections.
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
    public var port: Int { server.port }
    public var host: String { server.host }
    private let server: HTTPServer
    private let logger: Logger

    private init(server: HTTPServer, logger: Logger) {
        self.server = server
        self.logger = logger
    }

    /// Connections the operations port holds open at once, at most: scrapers and probes need a few. `work` counts
    /// them among the files it needs.
    public static let maxConnections = 32

    /// Binds and starts serving. Call `stop()` when done.
    /// - Throws: ``HTTPServerError`` when the port or a limit is out of range, or the port cannot be bound.
    public static func start(
        host: String,
        port: Int,
        limits: HTTPServerLimits = HTTPServerLimits(maxConnections: MetricsServer.maxConnections),
        registry: PrometheusCollectorRegistry,
        readiness: ReadinessProbe,
        beforeScrape: @escaping @Sendable () -> Void = {},
        logger: Logger = Logger(label: "receipt-worker.metrics")
    ) throws(HTTPServerError) -> MetricsServer {
        let routes = OperationsRoutes(registry: registry, readiness: readiness, beforeScrape: beforeScrape)
        let server = MetricsServer(
            server: try HTTPServer.start(
                host: host, port: port, limits: limits, purpose: "serve metrics",
                settings: ("METRICS_HOST", "METRICS_PORT"), logger: logger,
                makeHandler: { OperationsHandler(routes: routes, logger: logger) }
            ),
            logger: logger
        )
        logger.info(
            "serving /metrics, /healthz and /readyz", metadata: ["host": "\(host)", "port": "\(server.port)"]
        )
        return server
    }

    /// Closes the listening socket and the open connections, and stops the event loop thread. Idempotent; blocks,
    /// so call it from outside the server's event loop.
    public func stop() {
        if server.stop() { logger.debug("metrics server stopped", metadata: ["port": "\(port)"]) }
    }
}
