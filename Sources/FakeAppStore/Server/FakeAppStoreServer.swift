import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A local stand-in for Apple's verifyReceipt, App Store Server API and server notifications: answers real app
/// receipts and scenario receipts like Apple, serves the purchases it is given through the App Store Server API
/// (signed with its own chain; see `FakeAppStoreServer+ServerAPI.swift`), sends notifications about them
/// (`FakeAppStoreServer+Notifications.swift`), with configurable latency and faults, and counts what it answered.
///
/// ```swift
/// let server = try FakeAppStoreServer.start(FakeAppStoreConfiguration())
/// defer { server.stop() }
/// // POST {"receipt-data": …} to server.productionURL or server.sandboxURL
/// ```
public final class FakeAppStoreServer: Sendable {
    /// The port the server listens on (the ephemeral one when the configuration said 0).
    public let port: Int
    private let host: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    let state: FakeAppStoreState
    private let logger: Logger
    private let stopped = Mutex(false)
    /// The file the signing chain's root certificate (DER) was written to at start, when the configuration named one.
    public let rootCertificatePath: String?
    /// With TLS: the certificate authority's certificate (PEM) that issued the server's, for a client to trust.
    public let tlsAuthorityPEM: String?
    /// With TLS: the file `tlsAuthorityPEM` was written to at start, when the configuration named one.
    public let tlsAuthorityPath: String?

    private init(
        port: Int, host: String, group: MultiThreadedEventLoopGroup, channel: any Channel, state: FakeAppStoreState,
        logger: Logger, rootCertificatePath: String?, tlsAuthorityPEM: String?, tlsAuthorityPath: String?
    ) {
        self.rootCertificatePath = rootCertificatePath
        self.tlsAuthorityPEM = tlsAuthorityPEM
        self.tlsAuthorityPath = tlsAuthorityPath
        self.port = port
        self.host = host
        self.group = group
        self.channel = channel
        self.state = state
        self.logger = logger
    }

    /// Binds and starts serving on its own event loop threads. Call `stop()` when done.
    public static func start(
        _ configuration: FakeAppStoreConfiguration
    ) throws(FakeAppStoreError) -> FakeAppStoreServer {
        guard (0...65_535).contains(configuration.port) else {
            throw FakeAppStoreError(.invalidConfiguration, "port \(configuration.port) is not in 0…65535")
        }
        guard configuration.threads > 0 else {
            throw FakeAppStoreError(.invalidConfiguration, "threads must be at least 1, not \(configuration.threads)")
        }
        guard configuration.apiPageSize >= 1, (configuration.apiRateLimit ?? 1) >= 1 else {
            throw FakeAppStoreError(.invalidConfiguration, "apiPageSize and apiRateLimit must be at least 1")
        }
        guard configuration.notificationTimeoutMilliseconds >= 1 else {
            throw FakeAppStoreError(.invalidConfiguration, "notificationTimeoutMilliseconds must be at least 1")
        }
        if let url = configuration.notificationURL, !Self.isHTTPURL(url) {
            throw FakeAppStoreError(
                .invalidConfiguration, "the notification URL must be http:// or https://, not \(url)"
            )
        }
        let serverAPI = try ServerAPIState(configuration, chain: try signingChain(configuration))
        if let path = configuration.rootCertificatePath {
            try writeRootCertificate(of: serverAPI.chain, to: path)
        }
        guard configuration.http2MaxConcurrentStreams >= 1 else {
            throw FakeAppStoreError(.invalidConfiguration, "http2MaxConcurrentStreams must be at least 1")
        }
        var tls: TLSSetup?
        if let options = configuration.tls { tls = try makeTLS(options, http2: configuration.http2) }
        let state = FakeAppStoreState(configuration, serverAPI: serverAPI)
        let connection = ConnectionSetup(
            state: state, logger: configuration.logger, http2: configuration.http2,
            http2MaxConcurrentStreams: configuration.http2MaxConcurrentStreams, tls: tls?.context
        )
        let logger = configuration.logger
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.threads)
        let bootstrap = ServerBootstrap(group: group)
            // A load run opens thousands of connections at once; the kernel caps this at net.core.somaxconn.
            .serverChannelOption(.backlog, value: 8192)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try connection.configure(channel) }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw FakeAppStoreError(
                .bindFailed, "cannot listen on \(configuration.host):\(configuration.port): \(error)"
            )
        }
        let port = channel.localAddress?.port ?? configuration.port
        let server = FakeAppStoreServer(
            port: port, host: configuration.host, group: group, channel: channel, state: state, logger: logger,
            rootCertificatePath: configuration.rootCertificatePath, tlsAuthorityPEM: tls?.authorityPEM,
            tlsAuthorityPath: configuration.tls?.authorityCertificatePath
        )
        logger.debug("fake App Store listening", metadata: ["url": "\(server.productionURL)"])
        return server
    }

    /// `http://HOST:PORT/verifyReceipt` (`https://` with TLS), the production endpoint.
    public var productionURL: String { "\(baseURL)/verifyReceipt" }

    /// `http://HOST:PORT/sandbox/verifyReceipt` (`https://` with TLS), the sandbox endpoint.
    public var sandboxURL: String { "\(baseURL)/sandbox/verifyReceipt" }

    /// `http://HOST:PORT`, or `https://HOST:PORT` with TLS; a wildcard listen address is reached through loopback.
    public var baseURL: String {
        let scheme = tlsAuthorityPEM == nil ? "http" : "https"
        return switch host {
        case "0.0.0.0", "": "\(scheme)://127.0.0.1:\(port)"
        case "::": "\(scheme)://[::1]:\(port)"
        case let ipv6 where ipv6.contains(":"): "\(scheme)://[\(ipv6)]:\(port)"
        default: "\(scheme)://\(host):\(port)"
        }
    }

    /// The connections accepted so far, counted on the server's side.
    public func connections() -> FakeAppStoreConnections {
        state.currentConnections
    }

    /// What has been answered since the start or the last `resetStats()`.
    public func stats() -> FakeAppStoreStats {
        state.currentStats
    }

    public func resetStats() {
        state.resetStats()
    }

    /// Changes the random fault rates for the requests that arrive from now on.
    public func setFaults(_ rates: FaultRates) {
        state.setFaults(rates)
    }

    /// Changes the delay of the answers decided from now on.
    public func setLatency(milliseconds: Int, jitter: Int) {
        state.setLatency(milliseconds: milliseconds, jitter: jitter)
    }

    /// Closes the listening socket and every connection, and stops the event loop threads. Idempotent. Blocks: call
    /// it from outside the server's event loops.
    public func stop() {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
        state.serverAPI.sender.shutdown()
        logger.debug("fake App Store stopped", metadata: ["port": "\(port)"])
    }

    /// Returns when the listening socket closes (after `stop()`), for a command that serves until told to stop.
    public func waitUntilStopped() async {
        try? await channel.closeFuture.get()
    }
}
