import CLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX thread of its own for one blocking loop (an event loop, a sampler, a worker, a signal reader), so it holds
/// no thread of Dispatch's or Swift's cooperative pool. Joinable, unlike Foundation's `Thread`.
///
/// `@unchecked Sendable`: it holds only the thread's id, which any thread may pass to `pthread_join`,
/// `pthread_detach` and `pthread_equal` (on Darwin the id is a pointer, hence not `Sendable` by itself).
public struct DedicatedThread: @unchecked Sendable {
    #if canImport(Darwin)
    typealias ID = pthread_t?
    #else
    typealias ID = pthread_t
    #endif

    private final class Start {
        let name: String
        let run: () -> Void

        init(name: String, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }

    private let id: ID

    /// Starts `body` on a new thread named `name` (as `top -H` and debuggers show it; Linux keeps 15 bytes of it).
    /// `stackSize`: bytes, when the system's default (usually 8 MiB) will not do.
    /// Call `join()` or `detach()` on the result once.
    public static func start(
        name: String, stackSize: Int? = nil, _ body: sending @escaping () -> Void
    ) throws(ThreadError) -> DedicatedThread {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize {
            let rc = pthread_attr_setstacksize(&attributes, stackSize)
            guard rc == 0 else { throw ThreadError(operation: "pthread_attr_setstacksize", code: rc) }
        }
        let start = Unmanaged.passRetained(Start(name: name, run: body)).toOpaque()
        #if canImport(Darwin)
        var id: pthread_t?
        #else
        var id = pthread_t()
        #endif
        let rc = pthread_create(&id, &attributes, { argument in
            #if canImport(Darwin)
            let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
            _ = pthread_setname_np(start.name)
            #else
            guard let argument else { return nil }
            let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
            _ = clinux_set_thread_name(start.name)
            #endif
            start.run()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw ThreadError(operation: "pthread_create", code: rc)
        }
        return DedicatedThread(id: id)
    }

    /// Starts `body` on a new thread that nobody joins: its resources go when it ends.
    public static func detached(
        name: String, stackSize: Int? = nil, _ body: sending @escaping () -> Void
    ) throws(ThreadError) {
        try start(name: name, stackSize: stackSize, body).detach()
    }

    /// True when called on this thread.
    public var isCurrent: Bool {
        #if canImport(Darwin)
        guard let id else { return false }
        #endif
        return pthread_equal(pthread_self(), id) != 0
    }

    /// Waits for the thread to finish. Call once, and never from the thread itself (use `detach()` there).
    public func join() {
        #if canImport(Darwin)
        guard let id else { return }
        #endif
        _ = pthread_join(id, nil)
    }

    /// Lets the thread release its resources by itself when it ends.
    public func detach() {
        #if canImport(Darwin)
        guard let id else { return }
        #endif
        _ = pthread_detach(id)
    }
}
