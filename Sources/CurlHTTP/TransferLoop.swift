import CCurl
import CCurlMemory

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The body of the transport thread: owns every easy handle and drives the multi handles with
/// `curl_multi_socket_action`, waiting in the shared `SocketPoller` for ready sockets, libcurl's timers or a wake-up.
///
/// Several multi handles ("shards") split the connections: libcurl looks for an idle connection by walking the
/// multi handle's connections to the host one by one, which at thousands of connections costs more than the
/// request. A new transfer goes to the shard with the fewest transfers.
///
/// Not `Sendable`: created and used on the transport thread only.
final class TransferLoop {
    private let shards: [MultiHandle]
    private let poller: SocketPoller
    private let queue: TransportQueue
    private let configuration: CurlMultiTransport.Configuration
    /// Transfers attached to a multi handle, by easy handle.
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Transfers attached, per shard.
    private var load: [Int]
    /// Easy handles waiting for the next request, still set up for their last one; the last returned on top, taken
    /// first, so the ones at the bottom are the longest unused.
    private var idleHandles: [EasyHandle] = []
    /// The fewest idle handles since the last trim: that many at the bottom of `idleHandles` were not needed since.
    private var idleLowWater = 0
    /// When `trimIdle` runs next, in `monotonicMilliseconds()`.
    private var nextTrim: Int64 = 0
    /// Handles freed by one trim from which malloc's free memory is given back too: a burst's worth, whose heap is
    /// worth `malloc_trim`'s walk over the whole heap.
    private let heapTrimHandles = 256
    /// Header lists by the requests' header lines, shared by every transfer with those lines (a client sends the
    /// same few to Apple every time), freed with the loop. Past `maxHeaderLists`, a transfer builds its own.
    private var headerLists: [[String]: UnsafeMutablePointer<curl_slist>] = [:]
    /// `collectFinished`'s finished transfers of one shard, kept for its next call.
    private var done: [(handle: UnsafeMutableRawPointer, code: CURLcode)] = []
    private let maxHeaderLists = 32
    /// What each URL decides (`Route`), by URL: a new handle needs it for every request (a wave of calls is as many
    /// new handles), and reading the host costs more than the options. Past `maxHeaderLists` URLs, worked out each time.
    private var routes: [String: Route] = [:]
    /// Transfers in flight per host (`Route.authority`), counted only under
    /// `Configuration.waitsOnlyWhileOneConnectionFits`.
    private var inFlightByHost: [String: Int] = [:]
    /// As many as there can be calls in flight (`Configuration.maxIdleHandles`): a wave of answers returns that many
    /// handles, and the next wave of requests takes them again (destroying and re-creating them cost more than the
    /// requests). Those no request took for a whole `idleTrimIntervalMilliseconds` are cleaned up (`trimIdle`).
    private var maxIdleHandles: Int { configuration.maxIdleHandles ?? max(64, configuration.maxTotalConnections) }
    private let pollTimeoutMilliseconds: Int32 = 1_000
    /// `CURL_SOCKET_TIMEOUT` (`CURL_SOCKET_BAD`, a `#define` in curl/multi.h).
    private let CURL_SOCKET_TIMEOUT_VALUE: curl_socket_t = -1
    /// `CURL_CSELECT_IN`.
    private let CURL_CSELECT_IN_VALUE: Int32 = 1
    /// Full receive buffers handed to every transfer, and the connections that had one handed over and went quiet,
    /// which are run again: libcurl 7.88 can leave an HTTP/2 answer's last bytes undelivered (`QuietConnectionChecks`).
    private let fullBuffers = FullBufferCount()
    private var quietChecks: QuietConnectionChecks

    init(
        shards: [MultiHandle],
        poller: SocketPoller,
        queue: TransportQueue,
        configuration: CurlMultiTransport.Configuration
    ) {
        self.shards = shards
        self.poller = poller
        self.queue = queue
        self.configuration = configuration
        load = Array(repeating: 0, count: shards.count)
        quietChecks = QuietConnectionChecks(quietMilliseconds: configuration.quietConnectionRecheckMilliseconds)
        nextTrim = monotonicMilliseconds() + Int64(configuration.idleTrimIntervalMilliseconds)
    }

    deinit {
        for list in headerLists.values { curl_slist_free_all(list) }
    }

    /// Runs until the queue is stopped, then fails whatever is left with `.cancelled`.
    func run() {
        while true {
            let work = queue.take()
            if work.stop {
                finishAll(work.requests, cancelled: "transport shut down")
                return
            }
            for id in work.cancelledIDs {
                abort(id)
            }
            for request in work.requests {
                start(request)
            }
            if !work.requests.isEmpty { poller.counters.attached(at: .now) }
            var running: Int32 = 0
            let events = poller.wait(timeoutMilliseconds: waitMilliseconds())
            let now = monotonicMilliseconds()
            quietChecks.startRound()
            for event in events {
                guard shards.indices.contains(Int(event.tag)) else { continue }
                let full = handsOverFullBuffers {
                    _ = curl_multi_socket_action(shards[Int(event.tag)].raw, event.socket, event.flags, &running)
                }
                quietChecks.event(.init(tag: event.tag, socket: event.socket), delivered: full, now: now)
            }
            for (index, shard) in shards.enumerated() {
                guard let deadline = shard.context.timerDeadline, deadline <= now else { continue }
                shard.context.timerDeadline = nil
                let full = handsOverFullBuffers {
                    _ = curl_multi_socket_action(shard.raw, CURL_SOCKET_TIMEOUT_VALUE, 0, &running)
                }
                if full, !quietChecks.isEmpty {
                    quietChecks.timersDelivered(tag: Int32(index), now: now)
                }
            }
            if !quietChecks.isEmpty { runQuietConnections(now: now) }
            collectFinished()
            // Upload buffers whose bodies were sent in this round give their pages back, before any handle is given
            // another request (which happens only in a later round).
            _ = ccurl_global_pool_flush_discards()
            trimIdle(now: monotonicMilliseconds())
            let pause = configuration.eventPauseMicroseconds(inFlight: active.count, newRequests: work.requests.count)
            if pause > 0 { usleep(UInt32(clamping: pause)) }
        }
    }

    /// Every `idleTrimIntervalMilliseconds`: cleans up the idle handles no request took in the interval (keeping
    /// `minIdleHandles`), then lets the pool give back upload buffers none used, and after a burst malloc's free memory.
    private func trimIdle(now: Int64) {
        let interval = configuration.idleTrimIntervalMilliseconds
        guard interval > 0, now >= nextTrim else { return }
        nextTrim = now + Int64(interval)
        let keep = CurlMultiTransport.Configuration.minIdleHandles
        let surplus = max(0, min(idleLowWater, idleHandles.count) - keep)
        // The longest unused first; `EasyHandle.deinit` cleans each up, which gives its upload buffer to the pool.
        idleHandles.removeFirst(surplus)
        idleLowWater = idleHandles.count
        poller.counters.idleHandles(idleHandles.count)
        CurlGlobal.releaseIdleMemory(keepingBuffers: keep, heap: surplus >= heapTrimHandles)
    }

    /// Runs the connections due in `quietChecks` as if their sockets were readable: libcurl then runs every transfer
    /// on each, and those it left holding undelivered bytes deliver them.
    private func runQuietConnections(now: Int64) {
        var running: Int32 = 0
        for key in quietChecks.dueNow(now) where shards.indices.contains(Int(key.tag)) {
            let full = handsOverFullBuffers {
                _ = curl_multi_socket_action(shards[Int(key.tag)].raw, key.socket, CURL_CSELECT_IN_VALUE, &running)
            }
            quietChecks.ran(key, delivered: full, now: now)
        }
    }

    /// Runs `action` (a call into libcurl), saying whether libcurl handed a full receive buffer to a transfer in it.
    private func handsOverFullBuffers(_ action: () -> Void) -> Bool {
        let before = fullBuffers.count
        action()
        return fullBuffers.count != before
    }

    /// Until the first of libcurl's timers, or of `quietChecks`' connections, is due; at most
    /// `pollTimeoutMilliseconds`.
    private func waitMilliseconds() -> Int32 {
        let now = monotonicMilliseconds()
        var wait = Int64(pollTimeoutMilliseconds)
        if let deadline = shards.compactMap(\.context.timerDeadline).min() { wait = min(wait, deadline - now) }
        if let quiet = quietChecks.waitMilliseconds(now: now) { wait = min(wait, quiet) }
        return Int32(clamping: max(0, wait))
    }

    private func start(_ pending: PendingRequest) {
        let reused = idleHandles.popLast()
        idleLowWater = min(idleLowWater, idleHandles.count)
        if reused != nil { poller.counters.idleHandles(idleHandles.count) }
        guard let easy = reused ?? EasyHandle() else {
            complete(pending.completion, .failure(HTTPError(kind: .other, message: "curl_easy_init failed")))
            return
        }
        let transfer = Transfer(pending, easy: easy)
        transfer.fullBuffers = fullBuffers
        let url = pending.request.url
        let newRoute = easy.url == url ? nil : route(url)
        var waits = true
        if configuration.waitsOnlyWhileOneConnectionFits {
            let host = (newRoute ?? route(url)).authority
            waits = configuration.waitsForMultiplexing(inFlight: inFlightByHost[host, default: 0])
            transfer.host = host
        }
        do {
            try transfer.configure(
                configuration, route: newRoute, headerList: sharedHeaderList(pending.request), poller: poller,
                releaseUploadBuffer: CurlGlobal.libcurlGivesEachTransferAnUploadBuffer
                    && active.count >= configuration.uploadBufferReleaseThreshold,
                waitForMultiplexing: waits
            )
        } catch {
            recycle(easy, reset: true)
            complete(transfer.completion, .failure(error))
            return
        }
        let shard = load.indices.min { load[$0] < load[$1] } ?? 0
        transfer.shard = shard
        active[easy.raw] = transfer
        let code = curl_multi_add_handle(shards[shard].raw, easy.raw)
        guard code == CURLM_OK else {
            active[easy.raw] = nil
            recycle(easy, reset: true)
            let message = "curl_multi_add_handle failed: \(String(cString: curl_multi_strerror(code)))"
            complete(transfer.completion, .failure(HTTPError(kind: .other, message: message)))
            return
        }
        load[shard] += 1
        if let host = transfer.host { inFlightByHost[host, default: 0] += 1 }
        if easy.multiplexes && waits { poller.counters.waitedForMultiplexing() }
    }

    /// `transfer` is no longer in flight to its host.
    private func left(_ transfer: Transfer) {
        guard let host = transfer.host, let count = inFlightByHost[host] else { return }
        inFlightByHost[host] = count > 1 ? count - 1 : nil
    }

    /// Reads every `CURLMSG_DONE` and completes its transfer.
    ///
    /// All of a shard's messages are read before any handle is removed: `curl_multi_remove_handle` walks the messages
    /// still queued looking for the handle's own, so removing each while thousands of answers wait made a wave of
    /// answers cost the square of its size.
    private func collectFinished() {
        var remaining: Int32 = 0
        var any = false
        defer { if any { poller.counters.finished(at: .now) } }
        for shard in shards {
            done.removeAll(keepingCapacity: true)
            while let message = curl_multi_info_read(shard.raw, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                // `message` is invalid once the handle is removed: read the result first.
                done.append((handle, message.pointee.data.result))
            }
            any = any || !done.isEmpty
            for (handle, code) in done {
                curl_multi_remove_handle(shard.raw, handle)
                guard let transfer = active.removeValue(forKey: handle) else { continue }
                load[transfer.shard] -= 1
                left(transfer)
                let result = transfer.result(code)
                if case .success(let response) = result { poller.counters.received(response.httpVersion) }
                // A handle that failed, or points at its transfer's own header list, starts afresh next time.
                recycle(transfer.easy, reset: code != CURLE_OK || transfer.ownHeaderList != nil)
                complete(transfer.completion, result)
            }
        }
    }

    /// Aborts an in-flight transfer for a cancelled caller; does nothing if it already finished.
    private func abort(_ id: UInt64) {
        guard let (handle, transfer) = active.first(where: { $0.value.id == id }) else { return }
        curl_multi_remove_handle(shards[transfer.shard].raw, handle)
        active[handle] = nil
        load[transfer.shard] -= 1
        left(transfer)
        recycle(transfer.easy, reset: true)
        complete(transfer.completion, .failure(.cancelled("request cancelled")))
    }

    /// Fails queued and in-flight requests and releases every easy handle.
    private func finishAll(_ queued: [PendingRequest], cancelled reason: String) {
        let inFlight = active
        active.removeAll()
        inFlightByHost.removeAll()
        idleHandles.removeAll()
        idleLowWater = 0
        poller.counters.idleHandles(0)
        load = load.map { _ in 0 }
        for (handle, transfer) in inFlight {
            curl_multi_remove_handle(shards[transfer.shard].raw, handle)
            complete(transfer.completion, .failure(.cancelled(reason)))
        }
        for pending in queued {
            complete(pending.completion, .failure(.cancelled(reason)))
        }
    }

    /// Keeps a detached handle for the next request, reset first when `reset` (past the cap, it is cleaned up).
    private func recycle(_ easy: EasyHandle, reset: Bool) {
        guard idleHandles.count < maxIdleHandles else { return }
        if reset { easy.reset() }
        idleHandles.append(easy)
        poller.counters.idleHandles(idleHandles.count)
    }

    /// What `url` decides under the configuration, from the cache when it holds it.
    private func route(_ url: String) -> Route {
        if let route = routes[url] { return route }
        let route = Route(url: url, configuration: configuration)
        if routes.count < maxHeaderLists { routes[url] = route }
        return route
    }

    /// The cached header list for `request`'s header lines, made on first use; nil when the cache is full.
    private func sharedHeaderList(_ request: HTTPRequest) -> UnsafeMutablePointer<curl_slist>? {
        if let list = headerLists[request.headers] { return list }
        guard headerLists.count < maxHeaderLists, let list = try? Transfer.headerList(request.headers) else {
            return nil
        }
        headerLists[request.headers] = list
        return list
    }

    private func complete(
        _ completion: @Sendable (Result<HTTPResponse, HTTPError>) -> Void,
        _ result: Result<HTTPResponse, HTTPError>
    ) {
        queue.finished()
        completion(result)
    }
}

