/// The jobs a worker holds at one moment: what a shutdown that cannot finish (`work`'s SHUTDOWN_TIMEOUT_SECONDS)
/// leaves to their leases.
public struct JobsInHand: Sendable, Equatable {
    /// Every job claimed and neither written nor given back yet, in id order.
    public var jobIds: [Int64]
    /// Those whose verdict a writer has sent without the database acknowledging it yet, in id order: each was either
    /// committed (and stays) or not (its lease expires, the scheduler rescues it and it is verified again; the
    /// ledger's credit keys keep its credit single).
    public var writingIds: [Int64]
    /// A claim statement was sent and not answered: the jobs it claimed, if the database committed it, are this
    /// worker's by name yet unknown here (their leases expire and the scheduler rescues them like the others).
    public var claimInFlight: Bool

    public init(jobIds: [Int64] = [], writingIds: [Int64] = [], claimInFlight: Bool = false) {
        self.jobIds = jobIds
        self.writingIds = writingIds
        self.claimInFlight = claimInFlight
    }
}
