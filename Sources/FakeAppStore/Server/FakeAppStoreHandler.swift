import AppStoreModel
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Serves one HTTP/1.1 connection: POST /verifyReceipt, POST /sandbox/verifyReceipt, GET /stats, POST /stats/reset,
/// and the App Store Server API with the fake's own routes (`FakeAppStoreHandler+ServerAPI.swift`). Over HTTP/2 a
/// request with the header `X-Fake-Refuse: TOKEN` has its stream refused at its headers the first time TOKEN is seen.
/// `HTTPServerPipelineHandler` in front of it hands over one request at a time, so a keep-alive connection's
/// requests are answered in order even when an answer is delayed.
final class FakeAppStoreHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum RequestState {
        case idle
        case receiving(HTTPRequestHead, ByteBuffer)
        /// The body was too large and has been answered with 413; the rest is dropped.
        case discarding
    }

    let state: FakeAppStoreState
    private let responder: VerifyReceiptResponder
    private let logger: Logger
    private let encoder = JSONEncoder()
    private var request = RequestState.idle
    /// A delayed answer or a hang, cancelled when the connection goes away first.
    private var pending: Scheduled<Void>?

    init(state: FakeAppStoreState, logger: Logger) {
        self.state = state
        self.responder = VerifyReceiptResponder(state: state)
        self.logger = logger
        encoder.outputFormatting = [.withoutEscapingSlashes]
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), request) {
        case (.head(let head), _):
            // `X-Fake-Refuse: TOKEN`: the stream is refused as its headers arrive, before its body, the first time
            // TOKEN is seen, as a server shedding load refuses streams it has not processed.
            if let token = head.headers.first(name: "X-Fake-Refuse"), Self.http2Codec(context) != nil,
               state.firstRefusal(of: token)
            {
                request = .discarding
                refuseStream(context: context)
                return
            }
            request = .receiving(head, context.channel.allocator.buffer(capacity: 0))
        case (.body(var chunk), .receiving(let head, var body)):
            guard body.readableBytes + chunk.readableBytes <= state.maxBodyBytes else {
                request = .discarding
                sendPlain(context: context, status: .payloadTooLarge, text: "request body too large", close: true)
                return
            }
            request = .idle  // drop the reference so the append does not copy
            body.writeBuffer(&chunk)
            request = .receiving(head, body)
        case (.end, .receiving(let head, let body)):
            request = .idle
            route(context: context, head: head, body: body)
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

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead, body: ByteBuffer) {
        let path =
            head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? head.uri
        if head.method == .POST, let endpoint = Endpoint(path: path) {
            verifyReceipt(context: context, head: head, body: body, endpoint: endpoint)
            return
        }
        if serverAPI(context: context, head: head, path: path, body: body) {
            return
        }
        switch (head.method, path) {
        case (.GET, "/stats"):
            sendJSON(context: context, head: head, status: .ok, body: encodeStats())
        case (.POST, "/stats/reset"):
            state.resetStats()
            sendJSON(context: context, head: head, status: .ok, body: encodeStats())
        default:
            sendJSON(context: context, head: head, status: .notFound, body: Data(#"{"error":"not found"}"#.utf8))
        }
    }

    private func verifyReceipt(
        context: ChannelHandlerContext, head: HTTPRequestHead, body: ByteBuffer, endpoint: Endpoint
    ) {
        let settings = state.currentSettings
        var generator = SystemRandomNumberGenerator()
        let (reply, answer) = responder.reply(
            toBody: Array(body.readableBytesView),
            endpoint: endpoint,
            faults: settings.faults,
            now: Int64(Date().timeIntervalSince1970 * 1_000),
            using: &generator
        )
        state.record(endpoint: endpoint, answer: answer)
        deliver(reply, context: context, head: head, using: &generator)
    }

    /// Sends `reply` after the configured latency and jitter (and a slow fault's extra delay).
    func deliver<Generator: RandomNumberGenerator>(
        _ reply: FakeReply, context: ChannelHandlerContext, head: HTTPRequestHead, using generator: inout Generator
    ) {
        let settings = state.currentSettings
        var delay = settings.latencyMilliseconds
        if settings.jitterMilliseconds > 0 {
            delay += Int.random(in: 0...settings.jitterMilliseconds, using: &generator)
        }
        var reply = reply
        switch reply {
        case .http(let answer):
            delay += answer.extraDelayMilliseconds
        case .answer(let response):
            // Encoded now, while the request is read: a wave of answers due together then only has to be sent.
            reply = .http(.json(200, response.jsonBytes()))
        default:
            break
        }
        guard delay > 0 else {
            send(reply, context: context, head: head)
            return
        }
        pending = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
            self.pending = nil
            self.send(reply, context: context, head: head)
        }
    }

    func send(_ reply: FakeReply, context: ChannelHandlerContext, head: HTTPRequestHead) {
        switch reply {
        case .http(let answer):
            var headers = HTTPHeaders()
            for (name, value) in answer.headers { headers.add(name: name, value: value) }
            let body = answer.truncated ? answer.body.prefix(answer.body.count / 2) : answer.body[...]
            send(
                context: context, head: head, status: HTTPResponseStatus(statusCode: answer.status), headers: headers,
                body: Data(body), close: answer.truncated
            )
        case .answer(let response):
            sendJSON(context: context, head: head, status: .ok, body: encode(response))
        case .serviceUnavailable:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            headers.add(name: "Retry-After", value: "1")
            send(
                context: context, head: head, status: .serviceUnavailable, headers: headers,
                body: Data(FaultInjection.serviceUnavailablePage.utf8)
            )
        case .truncated(let response):
            let full = encode(response)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            send(
                context: context, head: head, status: .ok, headers: headers, body: full.prefix(full.count / 2),
                close: true
            )
        case .reset:
            resetConnection(context: context)
        case .refused:
            refuseStream(context: context)
        case .hang:
            let channel = context.channel
            pending = context.eventLoop.scheduleTask(in: .seconds(Int64(state.hangSeconds))) {
                channel.close(promise: nil)
            }
        }
    }

    /// On an HTTP/2 stream: RST_STREAM with REFUSED_STREAM, written below the HTTP/1 codec (which carries only
    /// HTTP/1 parts); on an HTTP/1.1 connection, a reset.
    private func refuseStream(context: ChannelHandlerContext) {
        guard let codec = Self.http2Codec(context) else {
            resetConnection(context: context)
            return
        }
        codec.writeAndFlush(NIOAny(HTTP2Frame.FramePayload.rstStream(.refusedStream)), promise: nil)
    }

    /// The HTTP/2-to-HTTP/1 codec's context when this handler serves an HTTP/2 stream, nil on an HTTP/1.1 connection.
    private static func http2Codec(_ context: ChannelHandlerContext) -> ChannelHandlerContext? {
        try? context.pipeline.syncOperations.context(handlerType: HTTP2FramePayloadToHTTP1ServerCodec.self)
    }

    /// Closes with SO_LINGER 0, so the kernel sends RST instead of FIN.
    private func resetConnection(context: ChannelHandlerContext) {
        let channel = context.channel
        guard let provider = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func sendJSON(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, body: Data
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        send(context: context, head: head, status: status, headers: headers, body: body)
    }

    private func sendPlain(context: ChannelHandlerContext, status: HTTPResponseStatus, text: String, close: Bool) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        headers.add(name: "Connection", value: "close")
        let responseHead = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if close { channel.close(promise: nil) }
        }
    }

    private func send(
        context: ChannelHandlerContext,
        head: HTTPRequestHead,
        status: HTTPResponseStatus,
        headers: HTTPHeaders,
        body: Data,
        close: Bool = false
    ) {
        var headers = headers
        let keepAlive = head.isKeepAlive && !close
        headers.add(name: "Content-Length", value: String(body.count))
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let responseHead = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    private func encode(_ response: VerifyReceiptResponse) -> Data {
        Data(response.jsonBytes())
    }

    private func encodeStats() -> Data {
        (try? encoder.encode(state.currentStats)) ?? Data("{}".utf8)
    }
}
