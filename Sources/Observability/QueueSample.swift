/// One row of `receipt_queue_summary`.
public struct QueueSample: Sendable, Hashable {
    public var state: String
    public var jobs: Int
    /// Seconds since the oldest job in this state was created; 0 when there is none.
    public var oldestAgeSeconds: Double

    public init(state: String, jobs: Int, oldestAgeSeconds: Double) {
        self.state = state
        self.jobs = jobs
        self.oldestAgeSeconds = oldestAgeSeconds
    }
}
