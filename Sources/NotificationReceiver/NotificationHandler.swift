import Logging
import NIOCore
import NIOHTTP1

/// Serves one connection of the receiver. `HTTPServerPipelineHandler` in front of it hands over one request at a
/// time, so a keep-alive connection's answers stay in order while the database is awaited.
///
/// - `POST` to any path but `/healthz`: `{"signedPayload": "…"}` is stored, and answered 200 once committed;
///   400 for a body that is not that (or a payload `receive_notification()` refuses), 413 past the body limit,
///   503 when it could not be stored, or at once while `maxWaiting` notifications wait for the database.
/// - `GET`/`HEAD /healthz`: 200. Any other method: 405.
final class NotificationHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// A notification's body is arriving.
        case receiving(HTTPRequestHead, ByteBuffer)
        /// Another request; its body is not read.
        case other(HTTPRequestHead)
        /// Answered 413 before the body ended: what still arrives is dropped, then the connection closes.
        case discarding
    }

    private let store: NotificationStore
    private let maxBodyBytes: Int
    private let logger: Logger
    private var state = State.idle

    init(store: NotificationStore, maxBodyBytes: Int, logger: Logger) {
        self.store = store
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), _):
            guard head.method == .POST, Self.path(head) != "/healthz" else {
                state = .other(head)
                return
            }
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > maxBodyBytes {
                refuseTooLarge(context: context, head: head, length: length)
            } else {
                state = .receiving(head, context.channel.allocator.buffer(capacity: 0))
                if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                    let proceed = HTTPResponseHead(version: head.version, status: .continue)
                    context.writeAndFlush(wrapOutboundOut(.head(proceed)), promise: nil)
                }
            }
        case (.body(var part), .receiving(let head, var body)):
            state = .idle  // the buffer is not shared while it grows
            guard body.readableBytes + part.readableBytes <= maxBodyBytes else {
                refuseTooLarge(context: context, head: head, length: body.readableBytes + part.readableBytes)
                return
            }
            body.writeBuffer(&part)
            state = .receiving(head, body)
        case (.body, _):
            break
        case (.end, .receiving(let head, let body)):
            state = .idle
            receive(context: context, head: head, body: body)
        case (.end, .other(let head)):
            state = .idle
            route(context: context, head: head)
        case (.end, .discarding):
            state = .idle
            context.close(promise: nil)
        case (.end, .idle):
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("notifications connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        if Self.path(head) == "/healthz" {
            if head.method == .GET || head.method == .HEAD {
                send(context: context, head: head, status: .ok, text: "ok")
            } else {
                send(context: context, head: head, status: .methodNotAllowed, text: "use GET", allow: "GET, HEAD")
            }
        } else {
            send(
                context: context, head: head, status: .methodNotAllowed,
                text: "use POST with {\"signedPayload\": \"…\"}", allow: "POST"
            )
        }
    }

    private func receive(context: ChannelHandlerContext, head: HTTPRequestHead, body: ByteBuffer) {
        let payload: String
        switch NotificationBody.signedPayload(Array(body.readableBytesView)) {
        case .success(let value):
            payload = value
        case .failure(let refusal):
            refuse(context: context, head: head, status: .badRequest, reason: refusal.reason)
            return
        }
        let answered = context.eventLoop.makePromise(of: StoreOutcome.self)
        store.store(payload) { answered.succeed($0) }
        answered.futureResult.assumeIsolated().whenSuccess { outcome in
            switch outcome {
            case .stored(let id):
                self.logger.info("notification stored", metadata: ["id": "\(id)"])
                self.send(context: context, head: head, status: .ok, text: "stored")
            case .refused(let reason):
                self.refuse(context: context, head: head, status: .badRequest, reason: reason)
            case .unavailable(let error):
                self.logger.error("notification not stored: answering 503", metadata: ["error": "\(error)"])
                self.send(context: context, head: head, status: .serviceUnavailable, text: "not stored, try again")
            case .busy:
                if let refused = self.store.countBusy() {
                    self.logger.warning(
                        "notifications waiting for the database are at the limit: answering 503",
                        metadata: ["refused": "\(refused)"]
                    )
                }
                self.send(
                    context: context, head: head, status: .serviceUnavailable,
                    text: "busy: too many notifications are waiting for the database, try again"
                )
            }
        }
    }

    /// Answers 413 at once and closes the connection once the request ends (whatever of its body still arrives is
    /// dropped unread), or after 5 s if it does not end.
    private func refuseTooLarge(context: ChannelHandlerContext, head: HTTPRequestHead, length: Int) {
        state = .discarding
        refuse(
            context: context, head: head, status: .payloadTooLarge,
            reason: "the body is \(length) bytes or more; at most \(maxBodyBytes) are taken", close: true
        )
        let channel = context.channel
        context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    }

    private func refuse(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, reason: String,
        close: Bool = false
    ) {
        logger.notice("notification refused", metadata: ["status": "\(status.code)", "reason": "\(reason)"])
        send(context: context, head: head, status: status, text: reason, close: close)
    }

    /// Writes a one-line plain-text answer. `close`: say `Connection: close`, and leave closing to the caller.
    private func send(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, text: String,
        allow: String? = nil, close: Bool = false
    ) {
        let body = Array((text + "\n").utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Cache-Control", value: "no-store")
        if let allow { headers.add(name: "Allow", value: allow) }
        let keepAlive = head.isKeepAlive && !close
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive && !close {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    private static func path(_ head: HTTPRequestHead) -> Substring {
        head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }
}
