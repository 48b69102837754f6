#if os(Linux)
import LoopbackHTTP
import Synchronization

/// A TCP listener on 127.0.0.1 that never answers HTTP: it closes every connection as soon as it accepts it (the
/// client sees the connection closed without an answer), or accepts none at all (the kernel completes the handshake
/// and the request waits unanswered until the client's timeout). Stands in for an App Store that has gone wrong.
final class BrokenAppleListener: Sendable {
    enum Behaviour: Sendable {
        case closeOnAccept
        case silent
    }

    private let listener: LoopbackListener
    /// Connections accepted (and closed) so far.
    private let accepted = Mutex(0)

    init(_ behaviour: Behaviour) throws {
        listener = try LoopbackListener()
        if behaviour == .closeOnAccept {
            listener.start(name: "broken-apple") { [self] _ in accepted.withLock { $0 += 1 } }
        }
    }

    var port: Int { listener.port }

    var url: String { "http://127.0.0.1:\(port)/verifyReceipt" }

    var acceptedConnections: Int { accepted.withLock { $0 } }

    /// Stops listening; waits for the accepting thread, if any, to end. Idempotent.
    func stop() { listener.stop() }
}
#endif
