/// Per-request probabilities (0…1) of each random fault. They are checked in declaration order against one uniform
/// draw, so together they should not exceed 1. Random faults apply to requests a scenario receipt does not fault.
public struct FaultRates: Codable, Sendable, Equatable {
    /// Status 21005 (receipt server unavailable).
    public var status21005: Double
    /// Status 21009 (internal data access error).
    public var status21009: Double
    /// Status 21199 with `"is_retryable": true`.
    public var status21199Retryable: Double
    /// HTTP 503 with an HTML page.
    public var html503: Double
    /// HTTP 200 whose body is the first half of the JSON answer, then the connection closes.
    public var truncatedJSON: Double
    /// TCP reset without an answer.
    public var connectionReset: Double
    /// No answer for `hangSeconds`.
    public var hang: Double
    /// Status 21004, as if the shared secret were wrong.
    public var wrongSecret21004: Double

    /// No random faults.
    public static let none = FaultRates()

    public init(
        status21005: Double = 0,
        status21009: Double = 0,
        status21199Retryable: Double = 0,
        html503: Double = 0,
        truncatedJSON: Double = 0,
        connectionReset: Double = 0,
        hang: Double = 0,
        wrongSecret21004: Double = 0
    ) {
        self.status21005 = status21005
        self.status21009 = status21009
        self.status21199Retryable = status21199Retryable
        self.html503 = html503
        self.truncatedJSON = truncatedJSON
        self.connectionReset = connectionReset
        self.hang = hang
        self.wrongSecret21004 = wrongSecret21004
    }

    /// Each rate with the fault it injects, in the order they are drawn.
    var table: [(rate: Double, fault: ScenarioReceipt.Fault)] {
        [
            (status21005, .status21005), (status21009, .status21009), (status21199Retryable, .status21199),
            (html503, .html503), (truncatedJSON, .truncated), (connectionReset, .reset), (hang, .hang),
            (wrongSecret21004, .status21004),
        ]
    }

    /// The fault for one request, or nil for a normal answer.
    func draw<Generator: RandomNumberGenerator>(using generator: inout Generator) -> ScenarioReceipt.Fault? {
        guard self != .none else { return nil }
        return drawFault(table, using: &generator)
    }
}

/// One uniform draw against `table`'s rates, in order: the fault whose share the draw falls in, or nil.
func drawFault<Fault, Generator: RandomNumberGenerator>(
    _ table: [(rate: Double, fault: Fault)], using generator: inout Generator
) -> Fault? {
    var remaining = Double.random(in: 0..<1, using: &generator)
    for (rate, fault) in table where rate > 0 {
        if remaining < rate { return fault }
        remaining -= rate
    }
    return nil
}
