import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP listener on 127.0.0.1 and an ephemeral port. Until `start(name:_:)` nothing is accepted: connections complete
/// their handshake in the kernel's backlog and wait. Once started, one thread accepts connections one at a time,
/// hands each to the handler and closes it.
public final class LoopbackListener: Sendable {
    public let port: Int
    private let listener: Int32
    private let stopped = Mutex(false)
    /// False while an accepting thread runs.
    private let finished = Mutex(true)

    public init() throws {
        (listener, port) = try Self.listeningSocket(backlog: 64)
    }

    /// A TCP socket bound to 127.0.0.1 and an ephemeral port and listening with `backlog`, and that port. For
    /// servers of their own (one thread per connection, say) that need only the socket.
    public static func listeningSocket(backlog: Int32) throws -> (socket: Int32, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw LoopbackHTTPClient.Failure.connect(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && getsockname(listener, generic, &length) == 0
            }
        }
        guard bound, listen(listener, backlog) == 0 else {
            let code = errno
            _ = closeSocket(listener)
            throw LoopbackHTTPClient.Failure.connect(code)
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    deinit {
        stop()
    }

    /// Starts accepting on a thread named `name`: `handle` gets each connection, which is closed after it returns.
    public func start(name: String, _ handle: @escaping @Sendable (Int32) -> Void) {
        finished.withLock { $0 = false }
        let thread = Thread { [self] in acceptLoop(handle) }
        thread.name = name
        thread.start()
    }

    /// Stops accepting and closes the listener; waits for the accepting thread, if any, to end. Idempotent.
    public func stop() {
        let already = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        while !finished.withLock({ $0 }) { usleep(1_000) }
        _ = closeSocket(listener)
    }

    private func acceptLoop(_ handle: @Sendable (Int32) -> Void) {
        defer { finished.withLock { $0 = true } }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            handle(client)
            _ = closeSocket(client)
            if stopped.withLock({ $0 }) { return }
        }
    }
}

func closeSocket(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
