import Logging
import NIOCore
import NIOHTTP1

/// Closes a connection that is too slow, without an answer: its request head not whole within the header timeout of
/// the connection's start (kept alive: of the next request's first bytes), its body not whole within the body timeout
/// of the head, or no next request started within the idle timeout of the last answer. No timeout runs while a
/// request is being handled (the handler may wait on a database; its answer ends that).
///
/// It sits behind `HTTPServerPipelineHandler`, so it sees one request at a time; the first bytes of a request still
/// being decoded show as a `channelReadComplete` without a request part. (Part of a next head that came in the same
/// read as the request answered at once keeps the idle timeout rather than the header timeout: bounded all the same.)
final class ConnectionTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Phase {
        /// Waiting for a request head (the header timer runs).
        case head
        /// Head received, body still arriving (the body timer runs). `answered`: the answer was sent already
        /// (a refusal before the body ended), which ends the request once its body has arrived.
        case body(answered: Bool)
        /// Request received and not answered yet (no timer).
        case handling
        /// Answered; no next request yet (the idle timer runs).
        case idle
    }

    private let header: TimeAmount
    private let body: TimeAmount
    private let idle: TimeAmount
    private let logger: Logger
    private var phase = Phase.head
    private var timer: Scheduled<Void>?
    /// Request parts arrived since the last `channelReadComplete`.
    private var reading = false
    /// Idle since an answer sent while reading: the `channelReadComplete` that ends that read is not a next request.
    private var idleFromThisRead = false

    init(header: TimeAmount, body: TimeAmount, idle: TimeAmount, logger: Logger) {
        self.header = header
        self.body = body
        self.idle = idle
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { enter(.head, context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        enter(.head, context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        switch (unwrapInboundIn(data), phase) {
        case (.head, _):
            enter(.body(answered: false), context: context)
        case (.end, .body(answered: true)):
            enter(.idle, context: context)
        case (.end, .body(answered: false)):
            enter(.handling, context: context)
        case (.body, _), (.end, _):
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes arrived while idle that are not a whole head yet: the next request has started.
        if case .idle = phase, !idleFromThisRead { enter(.head, context: context) }
        reading = false
        idleFromThisRead = false
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            switch phase {
            case .handling: enter(.idle, context: context)
            case .body: phase = .body(answered: true)  // the body timer goes on bounding what is still sent
            case .head, .idle: break
            }
        }
        context.write(data, promise: promise)
    }

    private func enter(_ next: Phase, context: ChannelHandlerContext) {
        phase = next
        if case .idle = next { idleFromThisRead = reading }
        timer?.cancel()
        timer = nil
        let (delay, what): (TimeAmount, String)
        switch next {
        case .head: (delay, what) = (header, "request head")
        case .body: (delay, what) = (body, "request body")
        case .idle: (delay, what) = (idle, "next request")
        case .handling: return
        }
        let channel = context.channel
        let logger = self.logger
        timer = context.eventLoop.scheduleTask(in: delay) {
            logger.debug(
                "closing a connection too slow to send its \(what)",
                metadata: ["peer": "\(channel.remoteAddress.map { "\($0)" } ?? "unknown")"]
            )
            channel.close(promise: nil)
        }
    }
}
