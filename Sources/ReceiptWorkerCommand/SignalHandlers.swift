import Dispatch
import Foundation

/// SIGTERM/SIGINT through Dispatch: the default action is switched off first (on Linux, libdispatch only
/// forwards a signal after the source is registered), then each signal calls `handler` on a private queue.
/// `@unchecked Sendable`: `sources` is immutable after init, and Dispatch sources are thread-safe.
final class SignalHandlers: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "receipt-worker.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
        Self.releaseTerminationSignals()
    }

    /// Blocks SIGTERM and SIGINT in this thread (and the threads it starts): they stay pending until released.
    static func holdTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Unblocks SIGTERM and SIGINT; a pending one is delivered now.
    static func releaseTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    private static var terminationSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
