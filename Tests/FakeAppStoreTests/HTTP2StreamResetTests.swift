import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import FakeAppStore

/// The fake's frame-level HTTP/2 handler without a socket: frames written straight into it on an `EmbeddedChannel`.
@Suite("Fake App Store: a reset stream's delayed answer is dropped")
struct HTTP2StreamResetTests {
    private static func handler(latencyMilliseconds: Int) throws -> (HTTP2ConnectionHandler, EmbeddedChannel) {
        let configuration = FakeAppStoreConfiguration(latencyMilliseconds: latencyMilliseconds)
        let serverAPI = try ServerAPIState(configuration, chain: try FakeAppStoreServer.signingChain(configuration))
        let state = FakeAppStoreState(configuration, serverAPI: serverAPI)
        let handler = HTTP2ConnectionHandler(
            routes: FakeAppStoreRoutes(state: state), logger: Logger(label: "test"), streamWindow: 65_535
        )
        return (handler, EmbeddedChannel(handler: handler))
    }

    private static func request(_ stream: Int, endStream: Bool = true) -> HTTP2Frame {
        let headers = HPACKHeaders([
            (":method", "POST"), (":path", "/verifyReceipt"), (":scheme", "https"), (":authority", "fake"),
        ])
        return HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: headers, endStream: endStream)))
    }

    @Test("requests sent and reset again and again hold no answers: each reset drops its stream's delayed answer")
    func resetDropsDelayedAnswer() throws {
        let (handler, channel) = try Self.handler(latencyMilliseconds: 60_000)
        defer { _ = try? channel.finish() }
        let streams = Array(stride(from: 1, through: 199, by: 2))
        for stream in streams { try channel.writeInbound(Self.request(stream)) }
        #expect(handler.pendingWork == streams.count)
        for stream in streams.prefix(60) {
            channel.pipeline.fireUserInboundEventTriggered(
                StreamClosedEvent(streamID: HTTP2StreamID(stream), reason: .cancel)
            )
        }
        #expect(handler.pendingWork == streams.count - 60)
        for stream in streams.dropFirst(60) {
            channel.pipeline.fireUserInboundEventTriggered(
                StreamClosedEvent(streamID: HTTP2StreamID(stream), reason: .cancel)
            )
        }
        #expect(handler.pendingWork == 0)
    }

    @Test("a delayed answer still goes out when its slot falls due, on the streams not reset")
    func answerAfterLatency() throws {
        let (handler, channel) = try Self.handler(latencyMilliseconds: 50)
        defer { _ = try? channel.finish() }
        try channel.writeInbound(Self.request(1))
        try channel.writeInbound(Self.request(3))
        channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: HTTP2StreamID(1), reason: .cancel))
        // The handler's slots are on the real clock (NIODeadline.now()), the embedded loop's time is its own.
        channel.embeddedEventLoop.advanceTime(to: .now() + .milliseconds(60))
        var answered: [HTTP2StreamID] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .headers = frame.payload { answered.append(frame.streamID) }
        }
        #expect(answered == [HTTP2StreamID(3)])
        #expect(handler.pendingWork == 0)
    }

    @Test("HEADERS without :method on a stream not being read (trailers after an early answer) are not a request")
    func trailersAreNotARequest() throws {
        let (handler, channel) = try Self.handler(latencyMilliseconds: 0)
        defer { _ = try? channel.finish() }
        let trailers = HPACKHeaders([("x-fake-refuse", "token-1")])
        try channel.writeInbound(
            HTTP2Frame(streamID: HTTP2StreamID(5), payload: .headers(.init(headers: trailers, endStream: true)))
        )
        #expect(try channel.readOutbound(as: HTTP2Frame.self) == nil)
        #expect(handler.pendingWork == 0)
    }
}
