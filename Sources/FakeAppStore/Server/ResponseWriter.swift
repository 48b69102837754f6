import NIOCore

/// Where one request's answer goes: an HTTP/1.1 connection (`HTTP1ResponseWriter`) or one HTTP/2 stream
/// (`HTTP2StreamWriter`). `FakeAppStoreRoutes` decides the answer and its delay; the writer puts it on the wire.
/// Used on `eventLoop` only.
protocol ResponseWriter: SendableMetatype {
    var eventLoop: any EventLoop { get }

    /// Sends a whole answer, with a `Content-Length` of `body`. `close`: an HTTP/1.1 connection closes once it is
    /// sent; an HTTP/2 stream ends with its answer either way, and the connection carries on.
    func respond(status: Int, headers: [(name: String, value: String)], body: ArraySlice<UInt8>, close: Bool)

    /// A server shedding load: HTTP/2 refuses the stream (RST_STREAM REFUSED_STREAM, safe to send again); HTTP/1.1,
    /// which cannot say so, resets the connection.
    func refuse()

    /// No answer, a reset instead: HTTP/1.1 closes the connection with SO_LINGER 0, so the kernel sends RST instead
    /// of FIN; HTTP/2 resets the stream only (RST_STREAM CANCEL).
    func reset()

    /// Gives up on the request without answering: HTTP/1.1 closes the connection; HTTP/2 resets the stream.
    func abandon()

    /// Runs `work` on the event loop after `milliseconds`, unless the connection closes first.
    func after(milliseconds: Int, _ work: @escaping () -> Void)
}
