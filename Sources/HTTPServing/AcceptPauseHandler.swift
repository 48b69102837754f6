import Logging
import NIOCore

/// On the listening channel: when accepting fails (EMFILE: no descriptor left; ENFILE, ENOBUFS, ENOMEM), stops
/// accepting for `pause`, then accepts again, and warns at most once a minute with the number of failures since.
///
/// NIO keeps the listening socket after such an error, and when no connection was accepted in that read it stays
/// registered for reads: the level-triggered epoll wakes the loop at once, `accept` fails again, and the loop spins at
/// 100% CPU (measured: about half a core on a 2-core machine while 1,100 connections held the descriptors). NIO's
/// `AcceptBackoffHandler` does not help there, as it only delays a `read()` the channel no longer asks for. Turning
/// `autoRead` off takes the socket out of the epoll set; turning it on again puts it back.
final class AcceptPauseHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let pause: TimeAmount
    private let purpose: String
    private let logger: Logger
    private var resume: Scheduled<Void>?
    /// Failed accepts, warned about at most once a minute.
    private var failures = LogThrottle()

    init(pause: TimeAmount, purpose: String, logger: Logger) {
        self.pause = pause
        self.purpose = purpose
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is IOError else {
            context.fireErrorCaught(error)
            return
        }
        report(error)
        guard resume == nil, let options = context.channel.syncOptions else { return }
        do {
            try options.setOption(.autoRead, value: false)
        } catch {
            return  // closed meanwhile
        }
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: pause) {
            self.resume = nil
            try? options.setOption(.autoRead, value: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
        context.fireChannelInactive()
    }

    private func report(_ error: any Error) {
        guard let failed = failures.count() else { return }
        logger.warning(
            "accepting a connection failed: pausing accepts briefly",
            metadata: ["server": "\(purpose)", "error": "\(error)", "failed_accepts": "\(failed)"]
        )
    }
}
