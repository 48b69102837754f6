/// The value of `receipt_worker_circuit_breaker_state`.
public enum CircuitBreakerGauge: Double, Sendable, CaseIterable {
    case closed = 0
    /// Apple answers again; claims ramp up.
    case recovering = 1
    /// Most recent calls failed; only probes go through.
    case open = 2

    /// From the breaker's state name (closed, recovering, open).
    public init?(name: String) {
        switch name {
        case "closed": self = .closed
        case "recovering": self = .recovering
        case "open": self = .open
        default: return nil
        }
    }
}
