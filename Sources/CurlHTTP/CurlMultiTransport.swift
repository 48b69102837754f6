import CCurl
import Synchronization
import ThreadSupport

/// Many HTTP transfers in flight on one dedicated thread: libcurl multi handles driven by `curl_multi_socket_action`
/// over an epoll set (`SocketPoller`).
///
/// `send` queues the request and wakes the thread; the thread attaches queued requests, lets libcurl act on the
/// sockets that are ready and on its timers, completes finished transfers, and waits again. Easy handles are reused
/// and the multi handles keep idle connections, so requests to one host share keep-alive connections. Above
/// `connectionsPerShard` connections, they are split over several multi handles (see `TransferLoop`).
///
/// Completions run on the transport thread, one at a time: they must be quick and must not block (hand the result
/// to a continuation, a queue or a task). Calling `send` from a completion is fine.
public final class CurlMultiTransport: Sendable {
    private let queue = TransportQueue()
    private let poller: SocketPoller
    /// The running thread until `shutdown` takes it to join it.
    private let thread: Mutex<DedicatedThread?>

    public init(configuration: Configuration = .init()) throws(HTTPError) {
        CurlGlobal.initialize()
        let poller = try SocketPoller()
        let total = max(1, configuration.maxTotalConnections)
        let perHost = max(0, configuration.maxHostConnections)
        // The limits are per multi handle: each shard gets its share of both.
        let count = Self.shardCount(maxTotalConnections: total, maxHostConnections: perHost)
        var shards: [MultiHandle] = []
        for index in 0..<count {
            shards.append(try MultiHandle(
                connections: Self.share(of: total, shard: index, of: count),
                maxHostConnections: perHost == 0 ? 0 : max(1, Self.share(of: perHost, shard: index, of: count)),
                maxConcurrentStreams: configuration.maxConcurrentStreams,
                multiplex: configuration.httpVersion != .http1_1, poller: poller, tag: Int32(index)
            ))
        }
        let queue = queue
        let thread: DedicatedThread
        do {
            thread = try DedicatedThread.start(name: "curl-transport") { [shards] in
                TransferLoop(shards: shards, poller: poller, queue: queue, configuration: configuration).run()
            }
        } catch {
            throw HTTPError(kind: .other, message: error.description)
        }
        self.poller = poller
        self.thread = Mutex(thread)
    }

    /// Whether plain `http://` to loopback may speak HTTP/2 with prior knowledge: libcurl before 8.0.0 fails every
    /// request after the first on such a connection ("Error in the HTTP2 framing layer", curl issue 10634), so
    /// `HTTPVersionPolicy.http2WithLoopbackCleartext` speaks HTTP/1.1 there with those versions.
    public static let supportsCleartextHTTP2 = isLibcurl8OrLater

    /// Whether libcurl tries every request parked for a connection again at each change (libcurl 8; 7.88 moves them
    /// on one at a time), which makes waiting for a multiplexing connection costly with thousands of calls
    /// (`Configuration.waitsOnlyWhileOneConnectionFits`).
    public static let retriesEveryParkedRequest = isLibcurl8OrLater

    /// Whether the libcurl linked at run time is 8.0.0 or later.
    public static let isLibcurl8OrLater = CurlGlobal.linkedVersionNumber >= 0x08_00_00

    /// Connections per multi handle: libcurl's search for an idle connection is linear in a host's connections.
    static let connectionsPerShard = 256

    /// Enough multi handles that none holds more than `connectionsPerShard` connections to one host: with a
    /// per-host limit (HTTP/2, where a few connections carry every call), that limit decides, so that a host's
    /// requests meet on the same few connections; without one, every connection may go to one host.
    static func shardCount(maxTotalConnections total: Int, maxHostConnections perHost: Int) -> Int {
        let perHostAtMost = perHost > 0 ? min(perHost, total) : total
        return max(1, (perHostAtMost + connectionsPerShard - 1) / connectionsPerShard)
    }

    /// Shard `index`'s part of `total` split over `count` shards as evenly as whole numbers allow.
    static func share(of total: Int, shard index: Int, of count: Int) -> Int {
        total / count + (index < total % count ? 1 : 0)
    }

    deinit {
        shutdown()
    }

    /// Requests accepted and not yet completed.
    public var inFlight: Int {
        queue.inFlight
    }

    /// Sockets held and responses received so far; safe from any thread.
    public var statistics: TransportStatistics {
        poller.counters.snapshot
    }

    /// Sends `request`; `completion` runs exactly once, on the transport thread (keep it quick).
    /// After `shutdown`, it runs at once on the caller's thread with `.cancelled`.
    public func send(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPError>) -> Void) {
        _ = enqueue(request, completion: completion)
    }

    /// Sends `request` and blocks the calling thread until it completes. For command-line tools and tests:
    /// never call it from a completion (it would wait for the thread it is running on; it fails instead).
    public func send(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPError> {
        if thread.withLock({ $0?.isCurrent ?? false }) {
            return .failure(HTTPError(kind: .other, message: "blocking send called on the transport thread"))
        }
        let outcome = ConditionLock<Result<HTTPResponse, HTTPError>?>(nil)
        send(request) { result in outcome.withLock { $0 = result } }
        return outcome.wait { $0 }
    }

    /// Stops accepting requests, fails queued and in-flight ones with `.cancelled` (on the transport thread), and
    /// waits for the thread to end. Idempotent: a second or concurrent call returns without waiting, and so does a
    /// call from a completion (or a `deinit` reached from one), which cannot wait for its own thread.
    public func shutdown() {
        _ = queue.stop()
        poller.wake()
        guard let thread = thread.withLock({ $0.take() }) else { return }
        if thread.isCurrent {
            thread.detach()
        } else {
            thread.join()
        }
    }

    /// Queues `request`, or completes it with `.cancelled` if the transport is shut down; returns its id.
    func enqueue(
        _ request: HTTPRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, HTTPError>) -> Void
    ) -> UInt64? {
        guard let id = queue.enqueue(request, completion: completion) else {
            completion(.failure(.cancelled("transport shut down")))
            return nil
        }
        poller.wake()
        return id
    }

    /// Cancels request `id`: completes it with `.cancelled` now if still queued, or has the thread abort it.
    func cancel(_ id: UInt64) {
        if let pending = queue.cancel(id) {
            pending.completion(.failure(.cancelled("request cancelled")))
        } else {
            poller.wake()
        }
    }
}
