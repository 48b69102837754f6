import Dispatch
import Foundation

/// SIGTERM/SIGINT through Dispatch: the default action is switched off first (on Linux, libdispatch only
/// forwards a signal after the source is registered), then each signal calls `handler` on a private queue.
/// `@unchecked Sendable`: `sources` is immutable after init, and Dispatch sources are thread-safe.
final class SignalHandlers: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "receipt-worker.signals")
        // A signal that arrived while held is pending; SIG_IGN would discard it, so note it first and hand it to
        // the handler ourselves once the sources exist (a second call, if Dispatch delivers it too, is harmless).
        var arrived: Set<Int32> = []
        sources = signals.map { number in
            if Self.isPending(number) { arrived.insert(number) }
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
        for number in signals where Self.isPending(number) { arrived.insert(number) }
        Self.releaseTerminationSignals()
        for number in arrived.sorted() { queue.async { handler(number) } }
    }

    private static func isPending(_ number: Int32) -> Bool {
        var pending = sigset_t()
        sigpending(&pending)
        return sigismember(&pending, number) == 1
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
