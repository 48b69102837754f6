import Synchronization

extension CurlMultiTransport {
    /// Sends `request` and suspends until it completes. Cancelling the task aborts the transfer with `.cancelled`.
    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPError> {
        let registration = Registration()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                registration.state.withLock { state in
                    guard case .idle = state else {
                        continuation.resume(returning: .failure(.cancelled("task cancelled")))
                        return
                    }
                    if let id = enqueue(request, completion: { continuation.resume(returning: $0) }) {
                        state = .sent(id)
                    }
                }
            }
        } onCancel: {
            registration.state.withLock { state in
                if case .sent(let id) = state { cancel(id) }
                state = .cancelled
            }
        }
    }
}

/// Links a task's cancellation to the request it sent, whichever of the two happens first.
private final class Registration: Sendable {
    enum State {
        case idle
        case sent(UInt64)
        case cancelled
    }

    let state = Mutex(State.idle)
}
