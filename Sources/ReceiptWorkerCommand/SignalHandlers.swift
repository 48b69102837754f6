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
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
