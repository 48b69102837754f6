import Logging
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// Serves one HTTP/2 connection at frame level, behind a `NIOHTTP2Handler` without a stream multiplexer: each open
/// stream's request (method, path, `Authorization`, the body so far) is kept by stream ID until its END_STREAM
/// arrives, then handed to `FakeAppStoreRoutes` with an `HTTP2StreamWriter`, which answers with HEADERS and DATA
/// frames. A channel and pipeline per stream cost the fake more CPU than its own work when thousands of answers are
/// due together (issue 27).
///
/// - `X-Fake-Refuse: TOKEN` refuses the stream (RST_STREAM REFUSED_STREAM) at its headers the first time TOKEN is
///   seen, as a server shedding load refuses streams it has not processed.
/// - A body past `maxBodyBytes` is answered 413, and the client asked to stop sending it (RST_STREAM NO_ERROR).
/// - Flow control: without a multiplexer, `NIOHTTP2Handler` leaves the receive windows to this handler, which opens
///   the connection's again as DATA arrives, and a stream's while its request body is still arriving.
/// - Frames written while a read, or a batch of answers due together, is handled go out with one flush at its end.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Work falling due within one slot of `slotNanoseconds`, run by one timer.
    private struct Slot {
        var timer: Scheduled<Void>
        var work: [(stream: HTTP2StreamID, run: () -> Void)]
    }

    /// Delayed answers due within the same 2 ms on a connection go out together, from one timer and with one flush, at
    /// the end of that slot: up to 2 ms later than drawn.
    private static let slotNanoseconds: UInt64 = 2_000_000
    /// The connection's receive window: HTTP/2's initial 65,535 bytes, which nothing here enlarges.
    private static let connectionWindow = 65_535

    private let routes: FakeAppStoreRoutes
    private let logger: Logger
    /// The receive window each stream starts with: the SETTINGS_INITIAL_WINDOW_SIZE this side advertises.
    private let streamWindow: Int
    /// The requests whose END_STREAM has not arrived yet. A stream not here is not read from (refused, answered).
    private var requests: [HTTP2StreamID: FakeRequest] = [:]
    /// Streams answered before their request body was all read (413): reset with NO_ERROR once the answer is sent,
    /// asking the client to stop sending the rest (RFC 9113 §8.1).
    private var cutShort: Set<HTTP2StreamID> = []
    /// Delayed answers and hangs by the slot they fall due in; cancelled when the connection closes.
    private var slots: [UInt64: Slot] = [:]
    /// The slot each stream's delayed answer or hang waits in: a stream the client resets (or that closes otherwise)
    /// has its work dropped at once, so streams sent and reset again and again hold no answers until they fall due.
    private var waiting: [HTTP2StreamID: UInt64] = [:]
    /// True while a read or a slot's work is handled: what it writes is flushed once, at its end.
    private var batching = false
    private var unflushed = false

    init(routes: FakeAppStoreRoutes, logger: Logger, streamWindow: Int) {
        self.routes = routes
        self.logger = logger
        self.streamWindow = streamWindow
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        batching = true
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            received(headers, on: frame.streamID, context: context)
        case .data(let data):
            received(data, on: frame.streamID, context: context)
        default:
            return
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        batching = false
        flushUnlessBatching(context: context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let update = event as? NIOHTTP2WindowUpdatedEvent, let window = update.inboundWindowSize {
            receiveWindowChanged(update.streamID, to: window, context: context)
        } else if let closed = event as? StreamClosedEvent {
            requests[closed.streamID] = nil
            cutShort.remove(closed.streamID)
            dropWork(of: closed.streamID)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for slot in slots.values { slot.timer.cancel() }
        slots = [:]
        waiting = [:]
        requests = [:]
        cutShort = []
        context.fireChannelInactive()
    }

    /// `NIOHTTP2Handler` has already answered a protocol error (RST_STREAM, or GOAWAY for the connection's).
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("fake App Store HTTP/2 error", metadata: ["error": "\(error)"])
        context.fireErrorCaught(error)
    }

    private func received(
        _ headers: HTTP2Frame.FramePayload.Headers, on stream: HTTP2StreamID, context: ChannelHandlerContext
    ) {
        if requests[stream] != nil {
            // Trailers: nothing in them is read, but they may end the request.
            if headers.endStream, let request = requests.removeValue(forKey: stream) {
                routes.route(request, to: writer(stream, context))
            }
            return
        }
        var request = FakeRequest(method: .GET, uri: "/", authorization: nil, body: ByteBuffer())
        var refusal: String?
        var hasMethod = false
        for (name, value, _) in headers.headers {
            switch name {
            case ":method":
                request.method = HTTPMethod(rawValue: value)
                hasMethod = true
            case ":path": request.uri = value
            case "authorization": request.authorization = value
            case "x-fake-refuse": refusal = value
            default: continue
            }
        }
        // A HEADERS frame without :method on a stream not being read is no request: trailers after the request was
        // answered early (413), which are not routed again.
        guard hasMethod else { return }
        if let refusal, routes.state.firstRefusal(of: refusal) {
            write(HTTP2Frame(streamID: stream, payload: .rstStream(.refusedStream)), context: context)
            return
        }
        if headers.endStream {
            routes.route(request, to: writer(stream, context))
        } else {
            requests[stream] = request
        }
    }

    private func received(
        _ data: HTTP2Frame.FramePayload.Data, on stream: HTTP2StreamID, context: ChannelHandlerContext
    ) {
        guard let index = requests.index(forKey: stream), case .byteBuffer(var chunk) = data.data else { return }
        let received = requests.values[index].body.readableBytes
        guard received + chunk.readableBytes <= routes.state.maxBodyBytes else {
            requests.remove(at: index)
            if !data.endStream { cutShort.insert(stream) }
            routes.bodyTooLarge(to: writer(stream, context))
            return
        }
        if received == 0 {
            requests.values[index].body = chunk  // a body in one DATA frame, the usual case: no copy
        } else {
            requests.values[index].body.writeBuffer(&chunk)
        }
        if data.endStream {
            routes.route(requests.remove(at: index).value, to: writer(stream, context))
        }
    }

    /// Opens a receive window again: the connection's always, a stream's while its request body is still arriving.
    private func receiveWindowChanged(_ stream: HTTP2StreamID, to window: Int, context: ChannelHandlerContext) {
        let target = stream == .rootStream ? Self.connectionWindow : streamWindow
        guard stream == .rootStream || requests[stream] != nil,
              let increment = Self.windowIncrement(window: window, target: target)
        else { return }
        write(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: increment)), context: context)
    }

    /// How far to open a receive window that has come down to `window`: back to `target` once half of it or more is
    /// used, so that updates go out in few frames; nil before that.
    static func windowIncrement(window: Int, target: Int) -> Int? {
        guard window <= target / 2 else { return nil }
        return min(target - window, Int(Int32.max))
    }

    private func writer(_ stream: HTTP2StreamID, _ context: ChannelHandlerContext) -> HTTP2StreamWriter {
        HTTP2StreamWriter(connection: self, context: context, streamID: stream)
    }

    /// Writes `frame`; flushed at once unless a read or a slot's work is being handled, which flush at their end.
    fileprivate func write(_ frame: HTTP2Frame, context: ChannelHandlerContext, flush: Bool = true) {
        context.write(wrapOutboundOut(frame), promise: nil)
        unflushed = true
        if flush { flushUnlessBatching(context: context) }
    }

    /// Writes an answer's last frame, `end`, which carries END_STREAM; a stream cut short is reset once that is sent
    /// (a reset written earlier would drop the answer's frames still waiting in `NIOHTTP2Handler`).
    fileprivate func endStream(_ stream: HTTP2StreamID, with end: HTTP2Frame, context: ChannelHandlerContext) {
        guard cutShort.remove(stream) != nil else {
            write(end, context: context)
            return
        }
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(end), promise: sent)
        unflushed = true
        flushUnlessBatching(context: context)
        sent.futureResult.assumeIsolated().whenSuccess {
            self.write(HTTP2Frame(streamID: stream, payload: .rstStream(.noError)), context: context)
        }
    }

    private func flushUnlessBatching(context: ChannelHandlerContext) {
        guard !batching, unflushed else { return }
        unflushed = false
        context.flush()
    }

    /// Runs `work` once `milliseconds` have passed, at the end of its 2 ms slot, with the other work due then.
    fileprivate func after(
        milliseconds: Int, stream: HTTP2StreamID, context: ChannelHandlerContext, _ work: @escaping () -> Void
    ) {
        let slot = (NIODeadline.now() + .milliseconds(Int64(milliseconds))).uptimeNanoseconds / Self.slotNanoseconds
        waiting[stream] = slot
        if let index = slots.index(forKey: slot) {
            slots.values[index].work.append((stream, work))
            return
        }
        let timer = context.eventLoop.assumeIsolated().scheduleTask(
            deadline: .uptimeNanoseconds((slot + 1) * Self.slotNanoseconds)
        ) {
            self.runSlot(slot, context: context)
        }
        slots[slot] = Slot(timer: timer, work: [(stream, work)])
    }

    /// Drops `stream`'s delayed answer or hang, and the slot's timer when nothing else waits in it.
    private func dropWork(of stream: HTTP2StreamID) {
        guard let slot = waiting.removeValue(forKey: stream), let index = slots.index(forKey: slot) else { return }
        slots.values[index].work.removeAll { $0.stream == stream }
        if slots.values[index].work.isEmpty {
            slots.values[index].timer.cancel()
            slots.remove(at: index)
        }
    }

    /// Delayed answers and hangs waiting for their slot (tests).
    var pendingWork: Int { slots.values.reduce(0) { $0 + $1.work.count } }

    private func runSlot(_ slot: UInt64, context: ChannelHandlerContext) {
        guard let due = slots.removeValue(forKey: slot) else { return }
        let outer = batching
        batching = true
        for work in due.work {
            if waiting[work.stream] == slot { waiting[work.stream] = nil }
            work.run()
        }
        batching = outer
        flushUnlessBatching(context: context)
    }
}

/// The answer to one request on an HTTP/2 stream, written as frames by its connection's `HTTP2ConnectionHandler`:
/// HEADERS and the body's DATA (split by `NIOHTTP2Handler` into frames the client's SETTINGS_MAX_FRAME_SIZE allows),
/// END_STREAM on the last DATA frame (on HEADERS for an empty body), as most servers, Apple's among them, end a stream.
/// libcurl 7.88 stalled on such answers when the transport did not run a quiet connection again
/// (`QuietConnectionChecks` in CurlHTTP; `HTTP2AnswerFramingTests`); an empty DATA frame of its own carrying END_STREAM
/// hid that.
struct HTTP2StreamWriter: ResponseWriter {
    fileprivate let connection: HTTP2ConnectionHandler
    let context: ChannelHandlerContext
    let streamID: HTTP2StreamID

    var eventLoop: any EventLoop { context.eventLoop }

    func respond(status: Int, headers: [(name: String, value: String)], body: ArraySlice<UInt8>, close: Bool) {
        var fields = HPACKHeaders()
        fields.reserveCapacity(headers.count + 2)
        fields.add(name: ":status", value: String(status))
        for (name, value) in headers { fields.add(name: name.lowercased(), value: value) }
        fields.add(name: "content-length", value: String(body.count))
        guard !body.isEmpty else {
            let headers = HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: fields, endStream: true)))
            connection.endStream(streamID, with: headers, context: context)
            return
        }
        connection.write(
            HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: fields))), context: context, flush: false
        )
        let data = context.channel.allocator.buffer(bytes: body)
        let last = HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(data), endStream: true)))
        connection.endStream(streamID, with: last, context: context)
    }

    func refuse() {
        connection.write(HTTP2Frame(streamID: streamID, payload: .rstStream(.refusedStream)), context: context)
    }

    func reset() {
        connection.write(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel)), context: context)
    }

    func abandon() {
        reset()
    }

    func after(milliseconds: Int, _ work: @escaping () -> Void) {
        connection.after(milliseconds: milliseconds, stream: streamID, context: context, work)
    }
}
