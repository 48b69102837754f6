import CSignals
import Foundation
import Synchronization

/// SIGTERM/SIGINT, each handed to `handler` on a thread of its own. A C handler writes the signal's number to a pipe
/// (`csignals_install`) and the thread reads it: the handler is in place before the signals held since start-up are
/// released, so a signal that arrives at any moment from then on reaches `handler` (a Dispatch signal source would
/// register asynchronously, and a signal arriving in between would be lost).
final class SignalHandlers: Sendable {
    private final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let cancelled = Flag()

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let readEnd = signals.withUnsafeBufferPointer { csignals_install($0.baseAddress, Int32($0.count)) }
        if readEnd >= 0 {
            let thread = Thread { [cancelled] in
                while true {
                    var number: UInt8 = 0
                    let count = read(readEnd, &number, 1)
                    if count == 1 {
                        if !cancelled.raised.load(ordering: .acquiring) { handler(Int32(number)) }
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
            thread.name = "signals"
            thread.start()
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

    /// Signals from now on are ignored (the command is finishing).
    func cancel() {
        cancelled.raised.store(true, ordering: .releasing)
    }
}
