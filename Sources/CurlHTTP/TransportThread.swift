#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A dedicated, joinable POSIX thread running one closure (Foundation's `Thread` cannot be joined).
struct TransportThread {
    #if canImport(Darwin)
    typealias ID = pthread_t?
    #else
    typealias ID = pthread_t
    #endif

    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    private let id: ID

    /// Starts `body` on a new thread. `name` is applied on Darwin only: glibc declares `pthread_setname_np` only
    /// under `_GNU_SOURCE`, which Swift's Glibc module does not define.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(HTTPError) -> TransportThread {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        #if canImport(Darwin)
        var id: pthread_t?
        #else
        var id = pthread_t()
        #endif
        let rc = pthread_create(&id, nil, { argument in
            #if canImport(Darwin)
            let body = Unmanaged<Body>.fromOpaque(argument).takeRetainedValue()
            _ = pthread_setname_np(body.name)
            #else
            guard let argument else { return nil }
            let body = Unmanaged<Body>.fromOpaque(argument).takeRetainedValue()
            #endif
            body.run()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw HTTPError(kind: .other, message: "pthread_create failed (errno \(rc))")
        }
        return TransportThread(id: id)
    }

    /// True when called on this thread.
    var isCurrent: Bool {
        #if canImport(Darwin)
        guard let id else { return false }
        #endif
        return pthread_equal(pthread_self(), id) != 0
    }

    /// Waits for the thread to finish. Call once, and never from the thread itself (use `detach()` there).
    func join() {
        #if canImport(Darwin)
        guard let id else { return }
        #endif
        _ = pthread_join(id, nil)
    }

    /// Lets the thread release its resources by itself when it ends.
    func detach() {
        #if canImport(Darwin)
        guard let id else { return }
        #endif
        _ = pthread_detach(id)
    }
}
