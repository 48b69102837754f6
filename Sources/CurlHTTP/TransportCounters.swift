import Synchronization

/// The counters behind `TransportStatistics`: written on the transport thread (and by libcurl's socket callbacks
/// during `curl_multi_cleanup`), read from any thread.
final class TransportCounters: Sendable {
    private let openSockets = Atomic<Int>(0)
    private let peakOpenSockets = Atomic<Int>(0)
    private let socketsOpened = Atomic<Int>(0)
    private let idleEasyHandles = Atomic<Int>(0)
    private let multiplexWaits = Atomic<Int>(0)
    private let bodiesReadByCallback = Atomic<Int>(0)
    /// Responses by `HTTPVersion.allCases` index.
    private let responses = Mutex([Int](repeating: 0, count: HTTPVersion.allCases.count))
    /// When requests were last handed to libcurl, and when a transfer last finished (set once per pass of the loop).
    private let moments = Mutex<(attached: ContinuousClock.Instant?, finished: ContinuousClock.Instant?)>((nil, nil))

    func socketOpened() {
        socketsOpened.add(1, ordering: .relaxed)
        let open = openSockets.add(1, ordering: .relaxed).newValue
        var peak = peakOpenSockets.load(ordering: .relaxed)
        while open > peak {
            let (exchanged, current) = peakOpenSockets.compareExchange(
                expected: peak, desired: open, ordering: .relaxed
            )
            if exchanged { break }
            peak = current
        }
    }

    func socketClosed() {
        openSockets.subtract(1, ordering: .relaxed)
    }

    func idleHandles(_ count: Int) {
        idleEasyHandles.store(count, ordering: .relaxed)
    }

    /// A request was started waiting for a connection that may multiplex it.
    func waitedForMultiplexing() {
        multiplexWaits.add(1, ordering: .relaxed)
    }

    /// A request's body is read through the read callback, so that its upload buffer can be given back once sent.
    func bodyReadByCallback() {
        bodiesReadByCallback.add(1, ordering: .relaxed)
    }

    func received(_ version: HTTPVersion) {
        guard let index = HTTPVersion.allCases.firstIndex(of: version) else { return }
        responses.withLock { $0[index] += 1 }
    }

    /// Requests were just attached to a multi handle.
    func attached(at instant: ContinuousClock.Instant) {
        moments.withLock { $0.attached = instant }
    }

    /// Transfers just finished (answered or failed).
    func finished(at instant: ContinuousClock.Instant) {
        moments.withLock { $0.finished = instant }
    }

    var snapshot: TransportStatistics {
        let counts = responses.withLock { $0 }
        let moments = moments.withLock { $0 }
        var byVersion: [HTTPVersion: Int] = [:]
        for (index, version) in HTTPVersion.allCases.enumerated() where counts[index] > 0 {
            byVersion[version] = counts[index]
        }
        return TransportStatistics(
            openSockets: openSockets.load(ordering: .relaxed),
            peakOpenSockets: peakOpenSockets.load(ordering: .relaxed),
            socketsOpened: socketsOpened.load(ordering: .relaxed),
            responses: byVersion,
            idleEasyHandles: idleEasyHandles.load(ordering: .relaxed),
            multiplexWaits: multiplexWaits.load(ordering: .relaxed),
            bodiesReadByCallback: bodiesReadByCallback.load(ordering: .relaxed),
            lastAttached: moments.attached,
            lastFinished: moments.finished
        )
    }
}
