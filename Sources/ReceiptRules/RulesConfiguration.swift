/// The settings the verdict rules depend on.
public struct RulesConfiguration: Sendable, Hashable {
    /// The apps this service verifies for (`APPLE_BUNDLE_IDS`).
    public var bundleIds: Set<String>
    /// `SANDBOX_POLICY` (with `SANDBOX_ALLOWED_USERS`).
    public var sandboxPolicy: SandboxPolicy
    /// An empty purchase list is retried until this attempt, then rejected `no_purchases`: right after a purchase
    /// Apple's copy of the receipt can lag behind the device's.
    public var noPurchasesAttempts: Int
    /// Without a client transaction id, purchases older than the order's time minus this slack are not candidates.
    public var orderTimeSlackMs: Int64
    /// `FAMILY_SHARING`: whether purchases shared through Family Sharing are credited (by default they are).
    public var familySharing: FamilySharingPolicy

    public init(
        bundleIds: Set<String>,
        sandboxPolicy: SandboxPolicy = .accept,
        noPurchasesAttempts: Int = 3,
        orderTimeSlackMs: Int64 = 5 * 60 * 1000,
        familySharing: FamilySharingPolicy = .grant
    ) {
        self.bundleIds = bundleIds
        self.sandboxPolicy = sandboxPolicy
        self.noPurchasesAttempts = noPurchasesAttempts
        self.orderTimeSlackMs = orderTimeSlackMs
        self.familySharing = familySharing
    }
}
