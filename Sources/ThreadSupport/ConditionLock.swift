import Dispatch
import Synchronization

/// A value behind a `Mutex`, and a way for a thread to block until the value is what it waits for: the one
/// hand-off between threads (a result, a stop request, a queue of work).
///
/// Every `withLock` wakes the threads blocked in a `wait`, which then look at the value again; a `wait` returns as
/// soon as its condition holds, without waiting at all if it holds already.
public final class ConditionLock<State>: Sendable {
    private struct Protected {
        var state: State
        /// One semaphore per thread blocked in a `wait`: the next `withLock` removes and signals them all.
        var waiters: [DispatchSemaphore] = []
    }

    private let mutex: Mutex<Protected>

    public init(_ state: sending State) {
        mutex = Mutex(Protected(state: state))
    }

    /// Runs `body` with the value, locked, and wakes the threads waiting for it to change.
    public func withLock<Result>(_ body: (inout sending State) throws -> sending Result) rethrows -> sending Result {
        let (result, waiters) = try mutex.withLock { protected in
            let result = try body(&protected.state)
            let waiters = protected.waiters
            protected.waiters = []
            return (result, waiters)
        }
        for waiter in waiters { waiter.signal() }
        return result
    }

    /// Blocks until `value` returns something for the value, and returns that.
    public func wait<Value>(for value: (inout sending State) -> sending Value?) -> sending Value {
        // Without a deadline the wait ends only with a value.
        block(until: nil, value)!
    }

    /// Blocks until `value` returns something for the value, and returns that; nil once `timeout` has passed.
    public func wait<Value>(
        for value: (inout sending State) -> sending Value?, timeout: Duration
    ) -> sending Value? {
        block(until: .now() + timeout.dispatchInterval, value)
    }

    /// Blocks until `condition` holds for the value.
    public func wait(until condition: (State) -> Bool) {
        _ = block(until: nil) { condition($0) ? true : nil }
    }

    /// Blocks until `condition` holds for the value or `timeout` has passed; returns whether it holds.
    @discardableResult
    public func wait(until condition: (State) -> Bool, timeout: Duration) -> Bool {
        block(until: .now() + timeout.dispatchInterval) { condition($0) ? true : nil } ?? false
    }

    private func block<Value>(
        until deadline: DispatchTime?, _ value: (inout sending State) -> sending Value?
    ) -> sending Value? {
        let semaphore = DispatchSemaphore(value: 0)
        while true {
            let found: Value? = mutex.withLock { protected in
                if let found = value(&protected.state) { return found }
                protected.waiters.append(semaphore)
                return nil
            }
            if let found { return found }
            if let deadline, semaphore.wait(timeout: deadline) == .timedOut {
                // Gone from the list, this semaphore can no longer be signalled by a later `withLock`.
                return mutex.withLock { protected in
                    protected.waiters.removeAll { $0 === semaphore }
                    return value(&protected.state)
                }
            } else if deadline == nil {
                semaphore.wait()
            }
        }
    }
}

extension Duration {
    /// This duration for Dispatch's deadlines, in whole nanoseconds; a negative one as zero.
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue <= Int64(Int.max) - 1_000_000_000 else { return .never }
        return .nanoseconds(Int(nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }
}
