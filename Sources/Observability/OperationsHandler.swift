import Logging
import NIOCore
import NIOHTTP1

import class Prometheus.PrometheusCollectorRegistry

/// What the operations port serves; shared by every connection.
struct OperationsRoutes: Sendable {
    let registry: PrometheusCollectorRegistry
    let readiness: ReadinessProbe
    let beforeScrape: @Sendable () -> Void

    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// Serves one connection of the operations port. `HTTPServerPipelineHandler` in front of it hands over one request
/// at a time, so a keep-alive connection's answers stay in order while a readiness check is awaited.
final class OperationsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: OperationsRoutes
    private let logger: Logger
    private var head: HTTPRequestHead?

    init(routes: OperationsRoutes, logger: Logger) {
        self.routes = routes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break  // no route takes a body
        case .end:
            guard let head else { return }
            self.head = nil
            route(context: context, head: head)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("metrics connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard head.method == .GET || head.method == .HEAD else {
            send(
                context: context, head: head, status: .methodNotAllowed, text: "use GET\n",
                extra: [("Allow", "GET, HEAD")]
            )
            return
        }
        switch path {
        case "/metrics":
            routes.beforeScrape()
            var body: [UInt8] = []
            routes.registry.emit(into: &body)
            send(
                context: context, head: head, status: .ok, body: body,
                contentType: OperationsRoutes.metricsContentType
            )
        case "/healthz":
            send(context: context, head: head, status: .ok, text: "ok\n")
        case "/readyz":
            let answered = context.eventLoop.makePromise(of: Readiness.self)
            routes.readiness.evaluate { answered.succeed($0) }
            answered.futureResult.assumeIsolated().whenSuccess { readiness in
                self.send(
                    context: context, head: head, status: readiness.isReady ? .ok : .serviceUnavailable,
                    text: readiness.isReady ? "ready\n" : "not ready: \(readiness.reason)\n"
                )
            }
        default:
            send(context: context, head: head, status: .notFound, text: "not found: try /metrics, /healthz, /readyz\n")
        }
    }

    private func send(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, text: String,
        extra: [(String, String)] = []
    ) {
        send(
            context: context, head: head, status: status, body: Array(text.utf8),
            contentType: "text/plain; charset=utf-8", extra: extra
        )
    }

    private func send(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, body: [UInt8],
        contentType: String, extra: [(String, String)] = []
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in extra { headers.add(name: name, value: value) }
        let keepAlive = head.isKeepAlive
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let responseHead = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if head.method != .HEAD {
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
