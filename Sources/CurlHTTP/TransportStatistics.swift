/// What a transport has done since it started: the sockets it holds (to every host), the HTTP version of the
/// responses it received, and the easy handles it keeps for the next requests.
public struct TransportStatistics: Sendable, Equatable {
    /// Sockets open now.
    public var openSockets: Int
    /// The most sockets open at once.
    public var peakOpenSockets: Int
    /// Sockets opened in all (a new connection each, a TLS handshake each for `https://`).
    public var socketsOpened: Int
    /// Responses received, per HTTP version.
    public var responses: [HTTPVersion: Int]
    /// Easy handles kept idle now for the next requests (after a burst, until a trim cleans up the unused ones).
    public var idleEasyHandles: Int
    /// Requests that waited for a connection that may multiplex them (`CURLOPT_PIPEWAIT`) rather than open another.
    public var multiplexWaits: Int
    /// Requests whose body was read through the read callback, so that its upload buffer went back once sent
    /// (`CurlMultiTransport.Configuration.uploadBufferReleaseThreshold`; only with a libcurl that gives each transfer
    /// an upload buffer of its own, before 8.7.0).
    public var bodiesReadByCallback: Int
    /// When the transport thread last handed requests to libcurl (to be sent at once, or as soon as a connection or
    /// stream is free); nil before the first.
    public var lastAttached: ContinuousClock.Instant?
    /// When a transfer last finished on the transport thread (its completion then ran); nil before the first.
    public var lastFinished: ContinuousClock.Instant?

    public init(
        openSockets: Int = 0, peakOpenSockets: Int = 0, socketsOpened: Int = 0, responses: [HTTPVersion: Int] = [:],
        idleEasyHandles: Int = 0, multiplexWaits: Int = 0, bodiesReadByCallback: Int = 0,
        lastAttached: ContinuousClock.Instant? = nil, lastFinished: ContinuousClock.Instant? = nil
    ) {
        self.openSockets = openSockets
        self.peakOpenSockets = peakOpenSockets
        self.socketsOpened = socketsOpened
        self.responses = responses
        self.idleEasyHandles = idleEasyHandles
        self.multiplexWaits = multiplexWaits
        self.bodiesReadByCallback = bodiesReadByCallback
        self.lastAttached = lastAttached
        self.lastFinished = lastFinished
    }
}
