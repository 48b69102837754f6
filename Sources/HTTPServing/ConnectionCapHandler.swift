import Logging
import NIOCore
import Synchronization

/// On the listening channel, in front of NIO's accept handler: an accepted connection beyond the cap is closed at once,
/// before any handler is set up for it. When that first happens a warning says so, then at most once a minute with the
/// number closed since, so a flood of connections cannot flood the log.
final class ConnectionCapHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let open: OpenConnections
    private let maxConnections: Int
    private let purpose: String
    private let logger: Logger
    /// Connections closed at the cap, warned about at most once a minute.
    private var refusals = LogThrottle()

    init(open: OpenConnections, maxConnections: Int, purpose: String, logger: Logger) {
        self.open = open
        self.maxConnections = maxConnections
        self.purpose = purpose
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let connection = unwrapInboundIn(data)
        guard open.admit(below: maxConnections) else {
            connection.close(promise: nil)
            refused()
            return
        }
        let open = self.open
        connection.closeFuture.whenComplete { _ in open.release() }
        context.fireChannelRead(data)
    }

    private func refused() {
        guard let closed = refusals.count() else { return }
        logger.warning(
            "open connections are at the cap: closing new ones at once until some end",
            metadata: ["server": "\(purpose)", "max_connections": "\(maxConnections)", "closed_at_cap": "\(closed)"]
        )
    }
}

/// The connections a server has open, counted as they are accepted and as they close (on any event loop).
final class OpenConnections: Sendable {
    private let count = Atomic<Int>(0)

    var current: Int { count.load(ordering: .relaxed) }

    /// Counts one more connection if fewer than `limit` are open; false (and nothing counted) otherwise.
    func admit(below limit: Int) -> Bool {
        guard count.add(1, ordering: .relaxed).newValue <= limit else {
            count.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func release() {
        count.subtract(1, ordering: .relaxed)
    }
}
