import NIOCore

/// Tells HTTP/2 with prior knowledge from HTTP/1.1 by a connection's first bytes (HTTP/2's connection preface, RFC
/// 9113 §3.4), has the pipeline set up for the one it found, hands it the bytes read so far and steps aside. Behind
/// TLS it does the same whatever ALPN chose: the client speaks first either way.
final class HTTPVersionDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// Adds the handlers for HTTP/2 (true) or HTTP/1.1 (false) at the end of the pipeline; runs on the event loop.
    private let configure: (ChannelPipeline.SynchronousOperations, Bool) throws -> Void
    private var received: ByteBuffer?

    init(configure: @escaping (ChannelPipeline.SynchronousOperations, Bool) throws -> Void) {
        self.configure = configure
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        if received == nil {
            received = chunk
        } else {
            received?.writeBuffer(&chunk)
        }
        guard let bytes = received?.readableBytesView else { return }
        let compared = min(bytes.count, Self.preface.count)
        let matches = bytes.prefix(compared).elementsEqual(Self.preface.prefix(compared))
        if matches && compared < Self.preface.count { return }
        do {
            try configure(context.pipeline.syncOperations, matches)
        } catch {
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        let buffered = received
        received = nil
        if let buffered {
            context.fireChannelRead(wrapInboundOut(buffered))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
