import Dispatch
import Synchronization
import ThreadSupport

/// Runs a blocking body now and then every `interval` on its own serial queue, until `stop()`: the queue gauges'
/// poller. A body that overruns delays the next run rather than overlapping it.
public final class PeriodicTask: Sendable {
    /// The timer until `stop()` takes it to cancel it.
    private let timer: Mutex<(any DispatchSourceTimer)?>

    public init(label: String, interval: Duration, body: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
        let nanoseconds = max(Int(interval.seconds * 1e9), 1_000_000)
        timer.schedule(deadline: .now(), repeating: .nanoseconds(nanoseconds), leeway: .milliseconds(100))
        timer.setEventHandler(handler: body)
        timer.resume()
        self.timer = Mutex(timer)
    }

    /// Stops future runs; a run in progress finishes on its own. Idempotent.
    public func stop() {
        timer.withLock { $0.take() }?.cancel()
    }

    deinit {
        stop()
    }
}
