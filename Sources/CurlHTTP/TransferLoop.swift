import CCurl

/// The body of the transport thread: owns every easy handle and drives the multi handle with `curl_multi_poll`.
///
/// Not `Sendable`: created and used on the transport thread only.
final class TransferLoop {
    private let multi: MultiHandle
    private let queue: TransportQueue
    private let configuration: CurlMultiTransport.Configuration
    /// Transfers attached to the multi handle, by easy handle.
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Reset easy handles waiting for the next request.
    private var idleHandles: [EasyHandle] = []
    private let maxIdleHandles = 64
    private let pollTimeoutMilliseconds: Int32 = 1_000

    init(multi: MultiHandle, queue: TransportQueue, configuration: CurlMultiTransport.Configuration) {
        self.multi = multi
        self.queue = queue
        self.configuration = configuration
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
            var running: Int32 = 0
            _ = curl_multi_perform(multi.raw, &running)
            collectFinished()
            _ = curl_multi_poll(multi.raw, nil, 0, pollTimeoutMilliseconds, nil)
        }
    }

    private func start(_ pending: PendingRequest) {
        guard let easy = idleHandles.popLast() ?? EasyHandle() else {
            complete(pending.completion, .failure(HTTPError(kind: .other, message: "curl_easy_init failed")))
            return
        }
        let transfer = Transfer(pending, easy: easy)
        do {
            try transfer.configure(userAgent: configuration.userAgent)
        } catch {
            recycle(easy)
            complete(transfer.completion, .failure(error))
            return
        }
        active[easy.raw] = transfer
        let code = curl_multi_add_handle(multi.raw, easy.raw)
        guard code == CURLM_OK else {
            active[easy.raw] = nil
            recycle(easy)
            let message = "curl_multi_add_handle failed: \(String(cString: curl_multi_strerror(code)))"
            complete(transfer.completion, .failure(HTTPError(kind: .other, message: message)))
            return
        }
    }

    /// Reads every `CURLMSG_DONE` and completes its transfer.
    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi.raw, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            // `message` is invalid once the handle is removed: read the result first.
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi.raw, handle)
            guard let transfer = active.removeValue(forKey: handle) else { continue }
            let result = transfer.result(code)
            recycle(transfer.easy)
            complete(transfer.completion, result)
        }
    }

    /// Aborts an in-flight transfer for a cancelled caller; does nothing if it already finished.
    private func abort(_ id: UInt64) {
        guard let (handle, transfer) = active.first(where: { $0.value.id == id }) else { return }
        curl_multi_remove_handle(multi.raw, handle)
        active[handle] = nil
        recycle(transfer.easy)
        complete(transfer.completion, .failure(.cancelled("request cancelled")))
    }

    /// Fails queued and in-flight requests and releases every easy handle.
    private func finishAll(_ queued: [PendingRequest], cancelled reason: String) {
        let inFlight = active
        active.removeAll()
        idleHandles.removeAll()
        for (handle, transfer) in inFlight {
            curl_multi_remove_handle(multi.raw, handle)
            complete(transfer.completion, .failure(.cancelled(reason)))
        }
        for pending in queued {
            complete(pending.completion, .failure(.cancelled(reason)))
        }
    }

    /// Resets a detached handle and keeps it for the next request (past the cap, it is cleaned up).
    private func recycle(_ easy: EasyHandle) {
        guard idleHandles.count < maxIdleHandles else { return }
        easy.reset()
        idleHandles.append(easy)
    }

    private func complete(
        _ completion: @Sendable (Result<HTTPResponse, HTTPError>) -> Void,
        _ result: Result<HTTPResponse, HTTPError>
    ) {
        queue.finished()
        completion(result)
    }
}
