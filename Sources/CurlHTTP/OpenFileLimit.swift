#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How many files (sockets included) this process may open, and how many a transport needs.
public enum OpenFileLimit {
    /// The files a process needs for `transport`'s sockets and `otherFiles` more (database connections, listening
    /// ports, the libraries' own). A socket per call in flight where calls cannot share connections (no per-host
    /// limit: HTTP/1.1, or a host that may not speak HTTP/2); otherwise the transport's connection cap, which a
    /// server answering HTTP/1.1 after all cannot exceed either (calls then wait for a connection).
    public static func demand(of transport: CurlMultiTransport.Configuration, otherFiles: Int = 64) -> Demand {
        let (files, overflow) = transport.maxSockets.addingReportingOverflow(max(0, otherFiles))
        return Demand(
            files: overflow ? Int.max : files,
            sockets: transport.maxSockets,
            socketPerCall: transport.maxHostConnections == 0
        )
    }

    /// What `demand(of:otherFiles:)` found.
    public struct Demand: Sendable, Equatable {
        /// Files needed in all.
        public var files: Int
        /// Sockets the transport may hold at once.
        public var sockets: Int
        /// Whether each call in flight may hold a socket (calls cannot share connections).
        public var socketPerCall: Bool

        public init(files: Int, sockets: Int, socketPerCall: Bool) {
            self.files = files
            self.sockets = sockets
            self.socketPerCall = socketPerCall
        }

        /// Why that many sockets, for a message.
        public var reason: String {
            socketPerCall
                ? "a socket per call in flight: HTTP/1.1 calls cannot share a connection"
                : "at most \(sockets) connections, shared by the calls; beyond them calls wait for a stream or a "
                    + "connection"
        }
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit (as network servers do; the soft limit is often 1,024
    /// while the hard one is far higher) and returns the soft limit now in force.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
