import Synchronization

/// A request accepted by `send` and not yet picked up by the transport thread.
struct PendingRequest: Sendable {
    let id: UInt64
    let request: HTTPRequest
    let completion: @Sendable (Result<HTTPResponse, HTTPError>) -> Void
}

/// The hand-off between callers of `send` and the transport thread; the only state both sides touch.
final class TransportQueue: Sendable {
    /// What the transport thread picks up in one pass of its loop.
    struct Work {
        var requests: [PendingRequest] = []
        var cancelledIDs: [UInt64] = []
        /// Set once by `stop()`: the loop then fails everything with `.cancelled` and returns.
        var stop = false
    }

    private struct State {
        var work = Work()
        var nextID: UInt64 = 0
        var inFlight = 0
    }

    private let state = Mutex(State())

    var inFlight: Int {
        state.withLock { $0.inFlight }
    }

    /// Queues a request; `nil` if the transport has stopped accepting.
    func enqueue(
        _ request: HTTPRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, HTTPError>) -> Void
    ) -> UInt64? {
        state.withLock { state in
            guard !state.work.stop else { return nil }
            state.nextID += 1
            state.inFlight += 1
            state.work.requests.append(PendingRequest(id: state.nextID, request: request, completion: completion))
            return state.nextID
        }
    }

    /// Takes everything queued since the last call.
    func take() -> Work {
        state.withLock { state in
            let work = state.work
            state.work.requests.removeAll()
            state.work.cancelledIDs.removeAll()
            return work
        }
    }

    /// Withdraws request `id` if the transport thread has not picked it up yet (the caller then completes it);
    /// otherwise asks the thread to abort it, which it ignores if the transfer already finished.
    func cancel(_ id: UInt64) -> PendingRequest? {
        state.withLock { state in
            if let index = state.work.requests.firstIndex(where: { $0.id == id }) {
                state.inFlight -= 1
                return state.work.requests.remove(at: index)
            }
            if !state.work.stop { state.work.cancelledIDs.append(id) }
            return nil
        }
    }

    /// Stops accepting requests; returns `false` if already stopped.
    func stop() -> Bool {
        state.withLock { state in
            defer { state.work.stop = true }
            return !state.work.stop
        }
    }

    /// Called by the transport thread just before it runs a completion.
    func finished() {
        state.withLock { $0.inFlight -= 1 }
    }
}
