extension CurlMultiTransport {
    /// Limits and identity for one transport (one multi handle, one connection cache).
    public struct Configuration: Sendable {
        /// Open connections at most (`CURLMOPT_MAX_TOTAL_CONNECTIONS`), and idle connections kept for reuse
        /// (`CURLMOPT_MAXCONNECTS`). Transfers beyond it wait inside libcurl for a free connection. Also the most
        /// idle easy handles kept for the next wave of requests.
        public var maxTotalConnections: Int
        /// Open connections per host at most (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0 means no per-host limit. Transfers
        /// beyond it wait inside libcurl: for a free stream on a multiplexed (HTTP/2) connection, or for a free
        /// connection with HTTP/1.1, where each call in flight holds one.
        public var maxHostConnections: Int
        /// Requests in flight at most on one HTTP/2 connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`; libcurl's default
        /// is 100). The server's own `SETTINGS_MAX_CONCURRENT_STREAMS` lowers it: with a per-host limit, a host takes
        /// at most `maxHostConnections` × the smaller of the two calls at once.
        public var maxConcurrentStreams: Int
        /// Whether a request to a host waits for a connection that may multiplex it (`CURLOPT_PIPEWAIT`) only while
        /// the transfers in flight to that host fit on one connection (`maxConcurrentStreams`), rather than always.
        /// By default with libcurl 8 (`CurlMultiTransport.retriesEveryParkedRequest`): it parks a waiting request
        /// while any connection is still in its handshake, so connections open one after another, and tries every
        /// parked request again at each change (8.14.1, 19,000 calls: 34 connections and 440 µs of CPU per call when
        /// every request waited, 64 and 118–143 µs when only the first connection's did). Beyond one connection's
        /// calls more connections are needed anyway. libcurl 7.88 opens as many connections either way and moves
        /// parked requests on one at a time; there every request waits, which cost 2–8 µs less per call on that wave.
        public var waitsOnlyWhileOneConnectionFits = CurlMultiTransport.retriesEveryParkedRequest
        /// Which HTTP versions are spoken.
        public var httpVersion: HTTPVersionPolicy
        /// A PEM file of CA certificates trusted for `https://` to loopback hosts only (tests, and the fake App Store
        /// serving TLS with a certificate it made); nil trusts the system's CAs there too. Every other host is
        /// verified against the system's CAs whatever this holds.
        public var loopbackCAFile: String?
        /// The `User-Agent` header of every request.
        public var userAgent: String
        /// How often memory left by a burst is given back: easy handles that no request took during a whole interval
        /// are cleaned up (`minIdleHandles` stay), the pages of upload buffers none used go back to the system, and
        /// when that freed many handles, malloc's free memory too. So a burst's memory is returned one to two
        /// intervals after it ends. 0 keeps everything (up to `maxTotalConnections` idle handles).
        public var idleTrimIntervalMilliseconds: Int
        /// From this many transfers in flight, an HTTP/2 request gives the pages of its upload buffer back to the
        /// system as soon as its body is sent, instead of holding them until the answer (4 KB per call for a small
        /// body, 8 KB for a real receipt's): the body is then read through a callback and progress is reported, at
        /// the cost of a page fault when the buffer is next written (the pages go back in batches, a system call
        /// per 64 requests or per round of the transport loop). Below it, requests are sent as before. 0: every
        /// HTTP/2 request. Only with a libcurl that gives each transfer an upload buffer of its own (before 8.7.0,
        /// `CurlGlobal.libcurlGivesEachTransferAnUploadBuffer`): later ones lend one buffer to every transfer in turn,
        /// and giving its pages back would only fault them in again for the next request.
        public var uploadBufferReleaseThreshold: Int
        /// Idle easy handles kept for the next wave of requests (a wave of answers returns one per call, and making
        /// them again costs more than the requests); those unused for an `idleTrimIntervalMilliseconds` are trimmed.
        /// nil: `maxTotalConnections`, at least 64.
        public var maxIdleHandles: Int?
        /// From this many transfers in flight, the transport thread waits `eventBatchingMicroseconds` after each
        /// round of socket events in which no new request came, so that the next round finds many answers on each
        /// connection rather than one. libcurl 7.88 runs every transfer on a connection for each event on its socket:
        /// with hundreds of HTTP/2 streams a connection, answers read one event at a time cost that many runs each
        /// (19,000 calls over 64 connections: 6-10% of the worker's CPU per call, measured). The wait adds at most
        /// that much to a call's time. 0: never waits.
        public var eventBatchingThreshold: Int
        public var eventBatchingMicroseconds: Int
        /// A connection on which libcurl delivered answer bytes and which then has no socket event for this long is
        /// run again (its transfers, as if its socket were readable), and again while that delivers more: libcurl
        /// 7.88 can leave the last bytes of an HTTP/2 answer held back, undelivered until the connection's next bytes
        /// or the call's timeout (`QuietConnectionChecks`). 0: never (the call then waits).
        public var quietConnectionRecheckMilliseconds: Int

        public init(
            maxTotalConnections: Int = 256,
            maxHostConnections: Int = 0,
            maxConcurrentStreams: Int = 100,
            httpVersion: HTTPVersionPolicy = .http2OverTLS,
            loopbackCAFile: String? = nil,
            userAgent: String = "receipt-worker",
            idleTrimIntervalMilliseconds: Int = 10_000,
            uploadBufferReleaseThreshold: Int = 1_024,
            eventBatchingThreshold: Int = 1_024,
            eventBatchingMicroseconds: Int = 2_000,
            quietConnectionRecheckMilliseconds: Int = 5
        ) {
            self.maxTotalConnections = maxTotalConnections
            self.maxHostConnections = maxHostConnections
            self.maxConcurrentStreams = maxConcurrentStreams
            self.httpVersion = httpVersion
            self.loopbackCAFile = loopbackCAFile
            self.userAgent = userAgent
            self.idleTrimIntervalMilliseconds = idleTrimIntervalMilliseconds
            self.uploadBufferReleaseThreshold = uploadBufferReleaseThreshold
            self.eventBatchingThreshold = eventBatchingThreshold
            self.eventBatchingMicroseconds = eventBatchingMicroseconds
            self.quietConnectionRecheckMilliseconds = quietConnectionRecheckMilliseconds
        }

        /// Whether a request that may share an HTTP/2 connection waits for one that may multiplex it
        /// (`CURLOPT_PIPEWAIT`) rather than opening another, with `inFlight` transfers already in flight to its host:
        /// always, or with `waitsOnlyWhileOneConnectionFits` only while they fit on one connection.
        func waitsForMultiplexing(inFlight: Int) -> Bool {
            !waitsOnlyWhileOneConnectionFits || inFlight < maxConcurrentStreams
        }

        /// How long the transport thread waits after a round with `inFlight` transfers in flight, `newRequests` of
        /// them started in that round (`eventBatchingThreshold`): a round that started requests goes on at once.
        func eventPauseMicroseconds(inFlight: Int, newRequests: Int) -> Int {
            guard eventBatchingThreshold > 0, inFlight >= eventBatchingThreshold, newRequests == 0 else { return 0 }
            return max(0, eventBatchingMicroseconds)
        }

        /// Idle easy handles every trim keeps, ready for the next requests.
        public static let minIdleHandles = 64
    }

    /// Which HTTP versions the transport speaks (`CURLOPT_HTTP_VERSION`). With HTTP/2, requests to a host wait for a
    /// connection that may multiplex them (`CURLOPT_PIPEWAIT`) instead of each opening its own; under
    /// `waitsOnlyWhileOneConnectionFits` (libcurl 8), only while the calls in flight to that host fit on one.
    public enum HTTPVersionPolicy: String, Sendable, Hashable, CaseIterable {
        /// HTTP/1.1 only: one call in flight per connection.
        case http1_1
        /// HTTP/2 when a TLS server offers it in the handshake (ALPN), HTTP/1.1 when it offers only that; plain
        /// `http://` is HTTP/1.1.
        case http2OverTLS
        /// As `http2OverTLS`, and plain `http://` to a loopback host is HTTP/2 with prior knowledge (h2c), which a
        /// server speaking only HTTP/1.1 cannot answer: for loopback peers known to speak HTTP/2, such as the fake
        /// App Store. Plain `http://` to any other host stays HTTP/1.1, and so does loopback where libcurl cannot
        /// reuse a prior-knowledge connection (`CurlMultiTransport.supportsCleartextHTTP2`).
        case http2WithLoopbackCleartext
    }
}

extension CurlMultiTransport.Configuration {
    /// Connections per host when HTTP/2 is spoken and no limit is given: few enough that TLS handshakes and their
    /// memory stay small, many enough to spread tens of thousands of calls at a few hundred streams each.
    public static let defaultHTTP2HostConnections = 64

    /// Connections beyond those to `urls`' hosts, under a per-host limit: other hosts the same transport reaches
    /// (OCSP responders), so that their requests never wait for a connection to Apple to close.
    public static let otherHostConnections = 16

    /// A configuration for `maxInFlight` calls at once to `urls`. `maxHostConnections` nil:
    /// `defaultHTTP2HostConnections` when HTTP/2 will be spoken to every URL, none otherwise (with HTTP/1.1 each call
    /// in flight holds a connection). Every connection may carry enough streams that the calls fit in the per-host
    /// limit (the server's own stream limit still applies).
    ///
    /// Under a per-host limit the connections in all are capped too: that limit for each of `urls`' hosts plus
    /// `otherHostConnections`. So a server that answers HTTP/1.1 after all (its TLS handshake offers no h2) costs no
    /// more sockets: calls beyond the cap wait inside libcurl for a connection, one call at a time on each.
    public static func sized(
        forCallsInFlight maxInFlight: Int, to urls: [String], httpVersion: CurlMultiTransport.HTTPVersionPolicy,
        maxHostConnections: Int? = nil
    ) -> Self {
        var configuration = Self(httpVersion: httpVersion)
        let allHTTP2 = !urls.isEmpty && urls.allSatisfy { Route(url: $0, configuration: configuration).mayMultiplex }
        let perHost = max(0, maxHostConnections ?? (allHTTP2 ? defaultHTTP2HostConnections : 0))
        let calls = max(64, maxInFlight)
        if perHost > 0 {
            let hosts = max(1, Set(urls.map(URLHost.authority)).count)
            let (product, overflow) = perHost.multipliedReportingOverflow(by: hosts)
            configuration.maxTotalConnections = overflow ? calls : min(calls, product + otherHostConnections)
        } else {
            // Every call in flight may hold a connection of its own.
            configuration.maxTotalConnections = calls
        }
        configuration.maxHostConnections = perHost
        configuration.maxConcurrentStreams = perHost > 0 ? max(100, (maxInFlight + perHost - 1) / perHost) : 100
        configuration.maxIdleHandles = calls
        return configuration
    }

    /// The most sockets this transport holds at once: each connection is one, and `maxTotalConnections`
    /// (`CURLMOPT_MAX_TOTAL_CONNECTIONS`, each multi handle its share) caps them whatever version the servers speak.
    public var maxSockets: Int {
        max(1, maxTotalConnections)
    }
}
