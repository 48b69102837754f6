import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Serves one HTTP/1.1 connection: reads each request's head and body and hands the request to `FakeAppStoreRoutes`
/// with an `HTTP1ResponseWriter`. `HTTPServerPipelineHandler` in front of it hands over one request at a time, so a
/// keep-alive connection's requests are answered in order even when an answer is delayed.
final class HTTP1ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum RequestState {
        case idle
        case receiving(HTTPRequestHead, ByteBuffer)
        /// The body was too large and has been answered with 413; the rest is dropped.
        case discarding
    }

    private let routes: FakeAppStoreRoutes
    private let logger: Logger
    private var request = RequestState.idle
    /// A delayed answer or a hang, cancelled when the connection goes away first.
    private var pending: Scheduled<Void>?

    init(routes: FakeAppStoreRoutes, logger: Logger) {
        self.routes = routes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), request) {
        case (.head(let head), _):
            request = .receiving(head, context.channel.allocator.buffer(capacity: 0))
        case (.body(var chunk), .receiving(let head, var body)):
            guard body.readableBytes + chunk.readableBytes <= routes.state.maxBodyBytes else {
                request = .discarding
                routes.bodyTooLarge(to: HTTP1ResponseWriter(handler: self, context: context, head: head))
                return
            }
            request = .idle  // drop the reference so the append does not copy
            body.writeBuffer(&chunk)
            request = .receiving(head, body)
        case (.end, .receiving(let head, let body)):
            request = .idle
            let fake = FakeRequest(
                method: head.method, uri: head.uri, authorization: head.headers.first(name: "Authorization"),
                body: body
            )
            routes.route(fake, to: HTTP1ResponseWriter(handler: self, context: context, head: head))
        case (.body, _), (.end, _):
            return
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        pending?.cancel()
        pending = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("fake App Store connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    /// Runs `work` after `milliseconds`, unless the connection closes first (one request at a time: one pending).
    fileprivate func after(milliseconds: Int, context: ChannelHandlerContext, _ work: @escaping () -> Void) {
        pending = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            self.pending = nil
            work()
        }
    }
}

/// The answer to one request on an HTTP/1.1 connection, in the request's HTTP version, keeping the connection open
/// when the request asked for that.
struct HTTP1ResponseWriter: ResponseWriter {
    fileprivate let handler: HTTP1ConnectionHandler
    let context: ChannelHandlerContext
    let head: HTTPRequestHead

    var eventLoop: any EventLoop { context.eventLoop }

    func respond(status: Int, headers: [(name: String, value: String)], body: ArraySlice<UInt8>, close: Bool) {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        let keepAlive = head.isKeepAlive && !close
        fields.add(name: "Content-Length", value: String(body.count))
        if !keepAlive {
            fields.add(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            fields.add(name: "Connection", value: "keep-alive")
        }
        let responseHead = HTTPResponseHead(
            version: head.version, status: HTTPResponseStatus(statusCode: status), headers: fields
        )
        context.write(handler.wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(
            handler.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil
        )
        let written = context.writeAndFlush(handler.wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func refuse() {
        reset()
    }

    func reset() {
        let channel = context.channel
        guard let provider = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func abandon() {
        context.channel.close(promise: nil)
    }

    func after(milliseconds: Int, _ work: @escaping () -> Void) {
        handler.after(milliseconds: milliseconds, context: context, work)
    }
}
