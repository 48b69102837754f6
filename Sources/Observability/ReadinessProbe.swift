import Dispatch
import Foundation
import Synchronization
import ThreadSupport

/// Runs a blocking readiness check (a database round trip) so that nobody waits on it for long: the check runs on a
/// private serial queue, each caller gets an answer within `timeout` (not ready, if the check has not finished), and
/// an answer is reused for `cacheFor`, so frequent probes cost one check per interval.
///
/// A check that hangs (a database behind a dead network path) keeps running on its queue; until it returns, every
/// caller is told at once that it has not answered, and no second check is started beside it.
public final class ReadinessProbe: Sendable {
    public let timeout: Duration
    public let cacheFor: Duration
    /// Names what is checked in timeout messages ("the database did not answer within 1 s").
    public let subject: String
    private let check: @Sendable () -> Readiness
    private let observer: @Sendable (Readiness) -> Void
    private let queue = DispatchQueue(label: "receipt-worker.readiness")
    private let state = Mutex(State())

    private struct State {
        var cached: (answer: Readiness, at: ContinuousClock.Instant)?
        /// When the check in progress started.
        var runningSince: ContinuousClock.Instant?
        var waiters: [UInt64: @Sendable (Readiness) -> Void] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// - Parameters:
    ///   - observer: called with every fresh answer (a finished check, or a caller's timeout), on any thread; for a
    ///     readiness gauge.
    ///   - check: blocking; runs on the probe's own queue, one at a time.
    public init(
        timeout: Duration = .seconds(1),
        cacheFor: Duration = .seconds(1),
        subject: String = "the readiness check",
        observer: @escaping @Sendable (Readiness) -> Void = { _ in },
        check: @escaping @Sendable () -> Readiness
    ) {
        self.timeout = timeout
        self.cacheFor = cacheFor
        self.subject = subject
        self.observer = observer
        self.check = check
    }

    /// A probe that always answers `answer` (tests, and a process with nothing to check).
    public static func constant(_ answer: Readiness) -> ReadinessProbe {
        ReadinessProbe(cacheFor: .zero) { answer }
    }

    /// Calls `completion` exactly once, within `timeout`, on any thread.
    public func evaluate(_ completion: @escaping @Sendable (Readiness) -> Void) {
        let now = ContinuousClock.now
        enum Next {
            case answer(Readiness)
            case wait(id: UInt64, startCheck: Bool, remaining: Duration)
        }
        let next: Next = state.withLock { state in
            if let cached = state.cached, now - cached.at < cacheFor {
                return .answer(cached.answer)
            }
            if let since = state.runningSince, now - since >= timeout {
                return .answer(.notReady("\(subject) has not answered for \(Self.format(now - since))"))
            }
            let id = state.nextWaiter
            state.nextWaiter += 1
            state.waiters[id] = completion
            let startCheck = state.runningSince == nil
            if startCheck { state.runningSince = now }
            return .wait(id: id, startCheck: startCheck, remaining: timeout - (now - (state.runningSince ?? now)))
        }
        switch next {
        case .answer(let answer):
            completion(answer)
        case .wait(let id, let startCheck, let remaining):
            if startCheck {
                queue.async { [self] in finish(check()) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, remaining.seconds)) { [self] in
                giveUp(waiter: id)
            }
        }
    }

    /// Blocks until the answer (at most about `timeout`). Not for an event loop thread.
    public func evaluate() -> Readiness {
        let answered = ConditionLock<Readiness?>(nil)
        evaluate { answer in answered.withLock { $0 = answer } }
        return answered.wait { $0 }
    }

    private func finish(_ answer: Readiness) {
        let waiters = state.withLock { state in
            state.cached = (answer, ContinuousClock.now)
            state.runningSince = nil
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        observer(answer)
        for waiter in waiters { waiter(answer) }
    }

    private func giveUp(waiter id: UInt64) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        let answer = Readiness.notReady("\(subject) did not answer within \(Self.format(timeout))")
        observer(answer)
        waiter(answer)
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%.3g s", max(0, duration.seconds))
    }
}
