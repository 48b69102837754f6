#if os(Linux)
import Glibc
import Synchronization
import ThreadSupport

/// A TCP listener on 127.0.0.1 that never answers HTTP: it closes every connection as soon as it accepts it (the
/// client sees the connection closed without an answer), or accepts none at all (the kernel completes the handshake
/// and the request waits unanswered until the client's timeout). Stands in for an App Store that has gone wrong.
final class BrokenAppleListener: Sendable {
    enum Behaviour: Sendable {
        case closeOnAccept
        case silent
    }

    let port: Int
    private let listener: Int32
    /// Connections accepted (and closed) so far.
    private let accepted = Mutex(0)
    private let stopped = Mutex(false)
    /// False while an accepting thread runs.
    private let finished: Mutex<Bool>

    init(_ behaviour: Behaviour) throws {
        let (listener, port) = try boundLoopbackSocket()
        guard listen(listener, 64) == 0 else {
            let code = errno
            close(listener)
            throw TestSetupError("listen: errno \(code)")
        }
        self.listener = listener
        self.port = port
        finished = Mutex(behaviour != .closeOnAccept)
        if behaviour == .closeOnAccept {
            try DedicatedThread.detached(name: "broken-apple") { [self] in acceptAndClose() }
        }
    }

    /// The accepting thread holds the listener: call `stop()` when done.
    deinit { stop() }

    var url: String { "http://127.0.0.1:\(port)/verifyReceipt" }

    var acceptedConnections: Int { accepted.withLock { $0 } }

    /// Stops listening; waits for the accepting thread, if any, to end on its failed accept. Idempotent.
    func stop() {
        let already = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        while !finished.withLock({ $0 }) { usleep(1_000) }
        close(listener)
    }

    private func acceptAndClose() {
        defer { finished.withLock { $0 = true } }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            accepted.withLock { $0 += 1 }
            close(client)
        }
    }
}
#endif
