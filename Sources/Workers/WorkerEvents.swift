import AppStoreClient
import ReceiptQueue

/// Hooks for metrics and tests. Each runs on the loop that saw the event and must be quick.
public struct WorkerEvents: Sendable {
    /// One HTTP call to Apple finished (production or sandbox).
    public var appleCall: @Sendable (AppStoreCall) -> Void
    /// A job's outcome was written; the duration is from claim to write, in seconds.
    public var jobWritten: @Sendable (JobStore.Completion, JobOutcome, Double) -> Void
    /// A scheduler pass moved jobs.
    public var swept: @Sendable (JobStore.SweepResult) -> Void

    public init(
        appleCall: @escaping @Sendable (AppStoreCall) -> Void = { _ in },
        jobWritten: @escaping @Sendable (JobStore.Completion, JobOutcome, Double) -> Void = { _, _, _ in },
        swept: @escaping @Sendable (JobStore.SweepResult) -> Void = { _ in }
    ) {
        self.appleCall = appleCall
        self.jobWritten = jobWritten
        self.swept = swept
    }
}
