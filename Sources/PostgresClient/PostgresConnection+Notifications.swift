import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension PostgresConnection {
    /// Starts listening to `channel` (any text: it is quoted as an identifier). Kept across ``reconnect()``.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(quoteIdentifier(channel))")
        if !listenedChannels.contains(channel) {
            listenedChannels.append(channel)
        }
    }

    /// Stops listening to `channel`.
    public func unlisten(_ channel: String) throws {
        try execute("UNLISTEN \(quoteIdentifier(channel))")
        listenedChannels.removeAll { $0 == channel }
    }

    /// Returns the notifications that have arrived, waiting up to `timeoutMilliseconds` for the first one;
    /// returns at once if some are already queued, and an empty array on timeout.
    ///
    /// - Throws: `.connectionLost` if the server closed the connection (e.g. it was terminated or shut down).
    public func waitForNotifications(timeoutMilliseconds: Int) throws -> [PostgresNotification] {
        let connection = try liveHandle()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(max(0, timeoutMilliseconds)))
        while true {
            // Read whatever the socket already holds, then hand out what libpq has queued.
            guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else {
                throw PostgresError(connection: connection, otherwise: .connectionLost)
            }
            let notifications = Self.dequeueNotifications(connection)
            if !notifications.isEmpty { return notifications }

            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else { return [] }
            try Self.waitUntilReadable(connection, timeout: remaining)
        }
    }

    /// Takes every notification libpq has parsed, freeing each one.
    private static func dequeueNotifications(_ connection: OpaquePointer) -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(connection) {
            defer { PQfreemem(notify) }
            notifications.append(
                PostgresNotification(
                    channel: String(cString: notify.pointee.relname),
                    payload: notify.pointee.extra.map { String(cString: $0) } ?? "",
                    processID: notify.pointee.be_pid
                )
            )
        }
        return notifications
    }

    /// Waits with `poll()` until the connection's socket has data (or was closed), or `timeout` passes.
    private static func waitUntilReadable(_ connection: OpaquePointer, timeout: Duration) throws {
        let socket = PQsocket(connection)
        guard socket >= 0 else {
            throw PostgresError(kind: .connectionLost, message: "the connection has no socket")
        }
        let (seconds, attoseconds) = timeout.components
        // Round up, so that a wait never ends just before the deadline and spins.
        let attosecondsPerMillisecond: Int64 = 1_000_000_000_000_000
        let fraction = (attoseconds + attosecondsPerMillisecond - 1) / attosecondsPerMillisecond
        let milliseconds = Int32(clamping: seconds * 1000 + fraction)
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) < 0 && errno != EINTR {
            throw PostgresError(kind: .protocolError, message: "poll() failed with errno \(errno)")
        }
    }
}
