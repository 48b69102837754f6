import CCurl

/// Owns one `CURLM` handle, driven through `curl_multi_socket_action`: libcurl reports the sockets to watch and its
/// next timeout through callbacks into `context`, so each round costs what is ready rather than every transfer open.
///
/// `@unchecked Sendable`: `raw` is used on the transport thread only, and `curl_multi_cleanup` runs in `deinit`,
/// after both the transport and its thread have released the handle (the context, which the callbacks reach during
/// the cleanup too, is released after it).
final class MultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    let context: Context

    /// What libcurl's callbacks reach: the shared poller, this handle's tag on its sockets, and its timer.
    /// Used on the transport thread only (and during `curl_multi_cleanup`).
    final class Context {
        let poller: SocketPoller
        let tag: Int32
        /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` next, in `monotonicMilliseconds()`;
        /// nil when it set no timer.
        var timerDeadline: Int64?

        init(poller: SocketPoller, tag: Int32) {
            self.poller = poller
            self.tag = tag
        }
    }

    /// A multi handle allowed `connections` connections (open, and idle ones kept for reuse), `maxHostConnections`
    /// of them to one host (0: no limit), multiplexing HTTP/2 requests up to `maxConcurrentStreams` a connection
    /// unless `multiplex` is off; its sockets are watched by `poller` under `tag`.
    init(
        connections: Int, maxHostConnections: Int, maxConcurrentStreams: Int, multiplex: Bool, poller: SocketPoller,
        tag: Int32
    ) throws(HTTPError) {
        guard let raw = curl_multi_init() else {
            throw HTTPError(kind: .other, message: "curl_multi_init failed")
        }
        self.raw = raw
        context = Context(poller: poller, tag: tag)
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let codes = [
            ccurl_multi_setopt_long(raw, CURLMOPT_MAXCONNECTS, max(1, connections)),
            ccurl_multi_setopt_long(raw, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, connections)),
            ccurl_multi_setopt_long(raw, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, maxHostConnections)),
            ccurl_multi_setopt_long(raw, CURLMOPT_PIPELINING, multiplex ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING),
            ccurl_multi_setopt_long(raw, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, maxConcurrentStreams)),
            ccurl_multi_setopt_socket_callback(raw, Self.socketCallback),
            ccurl_multi_setopt_ptr(raw, CURLMOPT_SOCKETDATA, contextPointer),
            ccurl_multi_setopt_timer_callback(raw, Self.timerCallback),
            ccurl_multi_setopt_ptr(raw, CURLMOPT_TIMERDATA, contextPointer),
        ]
        if let code = codes.first(where: { $0 != CURLM_OK }) {
            curl_multi_cleanup(raw)
            throw HTTPError(
                kind: .other, message: "curl_multi_setopt failed: \(String(cString: curl_multi_strerror(code)))"
            )
        }
    }

    deinit {
        curl_multi_cleanup(raw)
    }

    /// libcurl's `CURLMOPT_SOCKETFUNCTION`: watch `socket` for `what`, or stop.
    private static let socketCallback: curl_socket_callback = { _, socket, what, context, _ in
        guard let context else { return -1 }
        let handle = Unmanaged<Context>.fromOpaque(context).takeUnretainedValue()
        handle.poller.watch(socket, what: what, tag: handle.tag)
        return 0
    }

    /// libcurl's `CURLMOPT_TIMERFUNCTION`: call `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` in `milliseconds`
    /// (-1: no timer).
    private static let timerCallback: curl_multi_timer_callback = { _, milliseconds, context in
        guard let context else { return -1 }
        let handle = Unmanaged<Context>.fromOpaque(context).takeUnretainedValue()
        handle.timerDeadline = milliseconds < 0 ? nil : monotonicMilliseconds() + Int64(milliseconds)
        return 0
    }
}
