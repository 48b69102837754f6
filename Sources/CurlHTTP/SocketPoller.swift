import Synchronization

import CLinux
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The sockets libcurl asks to watch, and a wake-up descriptor other threads can signal. On Linux an epoll set
/// (each wait costs what is ready, not what is open, so thousands of connections waiting on Apple cost nothing
/// between answers); where epoll is missing, `poll` over the watched set.
///
/// `@unchecked Sendable`: other threads only call `wake()` (a `write` to the wake-up descriptor); everything else runs
/// on the transport thread, or in `deinit` once nothing else holds the poller.
final class SocketPoller: @unchecked Sendable {
    /// Readiness as libcurl's `CURL_CSELECT_IN/OUT/ERR` bits, and the tag the socket was watched under (which multi
    /// handle it belongs to).
    struct Event {
        var socket: Int32
        var flags: Int32
        var tag: Int32
    }

    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Set by `wake()`, cleared when the waiting side consumes the wake-up: one write per wait, however many
    /// requests were queued in between.
    private let wakePending = Atomic<Bool>(false)
    private let epoll: Epoll?
    /// With epoll: what each descriptor is registered for, by descriptor number (see `Registration`).
    private var registrations: [Registration] = []
    /// Without epoll: the watched set.
    private var watched: [Int32: (events: Int16, tag: Int32)] = [:]
    /// The sockets libcurl opened and closed through `opened(...)` and `closed(_:)`, and the responses' versions.
    let counters = TransportCounters()

    /// A descriptor's place in the epoll set. libcurl stops watching a keep-alive connection's socket after each
    /// answer and watches it again for the next request; deleting and adding it every time would cost three
    /// `epoll_ctl` calls per request. Instead the socket stays in the set, `parked`, and the next watch for the
    /// same events costs nothing. libcurl closes its sockets through `closed(_:)` (`CURLOPT_CLOSESOCKETFUNCTION`),
    /// which forgets the registration (closing removed the descriptor from the set), so a new socket that gets the
    /// same number is added afresh. An event on a parked socket (the server closed an idle connection) removes it.
    private struct Registration {
        /// The epoll events asked for; 0: not in the set.
        var interest: UInt32 = 0
        var tag: Int32 = 0
        var parked = false
    }

    init() throws(HTTPError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw HTTPError(kind: .other, message: "pipe failed (errno \(errno))") }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
        epoll = Epoll()
        epoll?.control(Epoll.add, wakeRead, events: Epoll.readable, tag: -1)
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Interrupts `wait`; safe from any thread.
    func wake() {
        guard !wakePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Watches `socket` for libcurl's `what` (`CURL_POLL_IN/OUT/INOUT`) under `tag`, or stops watching it
    /// (`CURL_POLL_REMOVE`).
    func watch(_ socket: Int32, what: Int32, tag: Int32) {
        if let epoll {
            guard socket >= 0 else { return }
            if Int(socket) >= registrations.count {
                let missing = Int(socket) + 64 - registrations.count
                registrations.append(contentsOf: repeatElement(Registration(), count: missing))
            }
            guard what != CURL_POLL_REMOVE_VALUE else {
                if registrations[Int(socket)].interest != 0 { registrations[Int(socket)].parked = true }
                return
            }
            let interest = (what & 1 != 0 ? Epoll.readable : 0) | (what & 2 != 0 ? Epoll.writable : 0)
            let current = registrations[Int(socket)]
            if current.interest == interest && current.tag == tag {
                registrations[Int(socket)].parked = false
                return
            }
            if current.interest != 0 && epoll.control(Epoll.modify, socket, events: interest, tag: tag) {
                registrations[Int(socket)] = Registration(interest: interest, tag: tag)
                return
            }
            // Not in the set (new, or closed since it was parked).
            if !epoll.control(Epoll.add, socket, events: interest, tag: tag) && errno == EEXIST {
                epoll.control(Epoll.modify, socket, events: interest, tag: tag)
            }
            registrations[Int(socket)] = Registration(interest: interest, tag: tag)
            return
        }
        guard what != CURL_POLL_REMOVE_VALUE else {
            watched[socket] = nil
            return
        }
        watched[socket] = ((what & 1 != 0 ? Int16(POLLIN) : 0) | (what & 2 != 0 ? Int16(POLLOUT) : 0), tag)
    }

    /// Opens a socket for libcurl (its `CURLOPT_OPENSOCKETFUNCTION`), close-on-exec so that child processes do not
    /// inherit connections, and counts it. Returns the descriptor, or -1 (`CURL_SOCKET_BAD`).
    func opened(family: Int32, type: Int32, protocol: Int32) -> Int32 {
        #if canImport(Glibc)
        let socket = Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        #else
        let socket = socket(family, type, `protocol`)
        #endif
        if socket >= 0 { counters.socketOpened() }
        return socket
    }

    /// Closes one of libcurl's sockets and forgets it (libcurl's `CURLOPT_CLOSESOCKETFUNCTION`). Returns `close`'s
    /// result.
    func closed(_ socket: Int32) -> Int32 {
        if socket >= 0 && Int(socket) < registrations.count { registrations[Int(socket)] = Registration() }
        watched[socket] = nil
        counters.socketClosed()
        return close(socket)
    }

    /// Waits up to `timeoutMilliseconds` for ready sockets (or a wake-up, which is consumed and not reported).
    func wait(timeoutMilliseconds: Int32) -> [Event] {
        var events: [Event] = []
        var woken = false
        if let epoll {
            epoll.wait(timeoutMilliseconds: timeoutMilliseconds) { socket, tag, ready in
                if tag < 0 {
                    woken = true
                    return
                }
                if Int(socket) < registrations.count && registrations[Int(socket)].parked {
                    epoll.control(Epoll.delete, socket, events: 0, tag: tag)
                    registrations[Int(socket)] = Registration()
                    return
                }
                var flags: Int32 = 0
                if ready & Epoll.readable != 0 { flags |= 1 }
                if ready & Epoll.writable != 0 { flags |= 2 }
                if ready & (Epoll.error | Epoll.hangUp) != 0 { flags |= 4 }
                events.append(Event(socket: socket, flags: flags, tag: tag))
            }
        } else {
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            for (socket, watch) in watched { fds.append(pollfd(fd: socket, events: watch.events, revents: 0)) }
            guard poll(&fds, nfds_t(fds.count), timeoutMilliseconds) > 0 else { return [] }
            for entry in fds where entry.revents != 0 {
                if entry.fd == wakeRead {
                    woken = true
                    continue
                }
                var flags: Int32 = 0
                if entry.revents & Int16(POLLIN) != 0 { flags |= 1 }
                if entry.revents & Int16(POLLOUT) != 0 { flags |= 2 }
                if entry.revents & Int16(POLLERR | POLLHUP) != 0 { flags |= 4 }
                events.append(Event(socket: entry.fd, flags: flags, tag: watched[entry.fd]?.tag ?? 0))
            }
        }
        if woken {
            var drain = [UInt8](repeating: 0, count: 256)
            while read(wakeRead, &drain, drain.count) > 0 {}
            // The caller takes its queue after this returns: whatever is queued from now on wakes it again.
            wakePending.store(false, ordering: .releasing)
        }
        return events
    }
}

/// An epoll(7) set, through <sys/epoll.h> (CLinux). Each event's 64-bit user data holds the socket (low half) and its
/// tag (high half). nil where epoll is missing (not Linux): the poller then uses `poll`.
private final class Epoll {
    #if os(Linux)
    static let add = EPOLL_CTL_ADD, delete = EPOLL_CTL_DEL, modify = EPOLL_CTL_MOD
    static let readable = EPOLLIN.rawValue, writable = EPOLLOUT.rawValue
    static let error = EPOLLERR.rawValue, hangUp = EPOLLHUP.rawValue
    #else
    // Never used: there is no epoll set to use them on.
    static let add: Int32 = 0, delete: Int32 = 0, modify: Int32 = 0
    static let readable: UInt32 = 0, writable: UInt32 = 0, error: UInt32 = 0, hangUp: UInt32 = 0
    #endif

    #if os(Linux)
    private static let capacity = 1024
    private let descriptor: Int32
    /// `struct epoll_event` is packed on x86_64 (12 bytes); Swift imports it with that layout.
    private let events: UnsafeMutableBufferPointer<epoll_event>

    init?() {
        descriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        events = .allocate(capacity: Self.capacity)
    }

    deinit {
        close(descriptor)
        events.deallocate()
    }

    /// `epoll_ctl`; false on failure (errno set).
    @discardableResult
    func control(_ operation: Int32, _ socket: Int32, events: UInt32, tag: Int32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(UInt32(bitPattern: socket)) | UInt64(UInt32(bitPattern: tag)) << 32
        return epoll_ctl(descriptor, operation, socket, &event) == 0
    }

    /// `epoll_wait`, calling `body` with each ready descriptor, its tag and its events.
    func wait(timeoutMilliseconds: Int32, _ body: (Int32, Int32, UInt32) -> Void) {
        let count = epoll_wait(descriptor, events.baseAddress, Int32(Self.capacity), timeoutMilliseconds)
        guard count > 0 else { return }
        for event in events[..<Int(count)] {
            let data = event.data.u64
            let socket = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
            body(socket, Int32(bitPattern: UInt32(data >> 32)), event.events)
        }
    }
    #else
    init?() {
        nil
    }

    @discardableResult
    func control(_ operation: Int32, _ socket: Int32, events: UInt32, tag: Int32) -> Bool {
        false
    }

    func wait(timeoutMilliseconds: Int32, _ body: (Int32, Int32, UInt32) -> Void) {}
    #endif
}

/// `CURL_POLL_REMOVE` (a plain `#define` in curl/multi.h).
let CURL_POLL_REMOVE_VALUE: Int32 = 4

/// Milliseconds on a monotonic clock, for libcurl's timer.
func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}
