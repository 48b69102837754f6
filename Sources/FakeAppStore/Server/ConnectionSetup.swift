import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// Sets up each accepted connection's pipeline: TLS when configured, then HTTP/1.1 or HTTP/2 as the client's first
/// bytes tell (`HTTPVersionDetector`), requests served by an `HTTP1ConnectionHandler` or, for all of an HTTP/2
/// connection's streams, one `HTTP2ConnectionHandler`.
/// Counts the connection and its protocol.
struct ConnectionSetup: Sendable {
    let state: FakeAppStoreState
    let logger: Logger
    let http2: Bool
    let http2MaxConcurrentStreams: Int
    let tls: NIOSSLContext?

    /// Runs on the connection's event loop.
    func configure(_ channel: any Channel) throws {
        let state = state
        state.connectionOpened()
        channel.closeFuture.whenComplete { _ in state.connectionClosed() }
        let pipeline = channel.pipeline.syncOperations
        if let tls {
            try pipeline.addHandler(NIOSSLServerHandler(context: tls))
        }
        guard http2 else {
            try configureHTTP1(pipeline)
            return
        }
        try pipeline.addHandler(HTTPVersionDetector { pipeline, isHTTP2 in
            state.connectionSpeaks(http2: isHTTP2)
            if isHTTP2 {
                try configureHTTP2(pipeline)
            } else {
                try configureHTTP1(pipeline)
            }
        })
    }

    private func configureHTTP1(_ pipeline: ChannelPipeline.SynchronousOperations) throws {
        if !http2 { state.connectionSpeaks(http2: false) }
        // The answers' headers are the routes' own constants: no need to validate each one.
        try pipeline.configureHTTPServerPipeline(withErrorHandling: true, withOutboundHeaderValidation: false)
        try pipeline.addHandler(HTTP1ConnectionHandler(routes: FakeAppStoreRoutes(state: state), logger: logger))
    }

    /// `NIOHTTP2Handler` in frame mode, no stream multiplexer: one `HTTP2ConnectionHandler` serves every stream.
    private func configureHTTP2(_ pipeline: ChannelPipeline.SynchronousOperations) throws {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = connection.initialSettings.map { setting in
            setting.parameter == .maxConcurrentStreams
                ? HTTP2Setting(parameter: .maxConcurrentStreams, value: http2MaxConcurrentStreams) : setting
        }
        // A stand-in under load and fault injection: clients cancelling calls (timeouts, shutdown) reset many
        // streams, which a public server would count against them.
        connection.maximumRecentlyResetStreams = max(connection.maximumRecentlyResetStreams, http2MaxConcurrentStreams)
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamResetFrameRateLimit.maximumCount = Int.max / 2
        stream.streamErrorRateLimit.maximumCount = Int.max / 2
        let streamWindow = connection.initialSettings.first { $0.parameter == .initialWindowSize }?.value ?? 65_535
        try pipeline.addHandler(
            NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: stream)
        )
        try pipeline.addHandler(
            HTTP2ConnectionHandler(routes: FakeAppStoreRoutes(state: state), logger: logger, streamWindow: streamWindow)
        )
    }
}
