/// Where a dead letter was made: by a worker writing a last failed attempt, or by the scheduler (a retry out of
/// attempts, or an expired lease on the last attempt).
public enum DeadLetterPath: String, Sendable, CaseIterable {
    case worker, scheduler
}
