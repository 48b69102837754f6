import CSignals
import Foundation
import ThreadSupport

/// SIGTERM/SIGINT, each handed to `handler` on a thread of its own. A C handler writes the signal's number to a pipe
/// (`csignals_install`) and the thread reads it: the handler is in place before the signals held since the process's
/// first code (CSignals) are released, so a signal that arrives at any moment from then on reaches `handler` (a
/// Dispatch signal source would register asynchronously, and a signal arriving in between would be lost).
final class SignalHandlers: Sendable {
    private let cancelled = ConditionLock(false)

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) throws(ThreadError) {
        let readEnd = signals.withUnsafeBufferPointer { csignals_install($0.baseAddress, Int32($0.count)) }
        if readEnd >= 0 {
            try DedicatedThread.detached(name: "signals") { [cancelled] in
                while true {
                    var number: UInt8 = 0
                    let count = read(readEnd, &number, 1)
                    if count == 1 {
                        if !cancelled.withLock({ $0 }) { handler(Int32(number)) }
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        }
        Self.releaseTerminationSignals()
    }

    /// Unblocks SIGTERM and SIGINT, which CSignals blocks before `main`; a pending one is delivered now.
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
        cancelled.withLock { $0 = true }
    }
}
