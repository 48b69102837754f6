/// What to do with a purchase a family member shares through Family Sharing (`inAppOwnershipType` FAMILY_SHARED):
/// `FAMILY_SHARING`.
public enum FamilySharingPolicy: String, Sendable, Hashable, CaseIterable {
    /// Family members are entitled, as Apple intends for products with Family Sharing turned on.
    case grant
    /// Never credit them: the job is rejected `family_shared` (the purchaser's own copy is credited as usual).
    case reject

    /// Whether this purchase may be credited.
    public func allows(_ purchase: Purchase) -> Bool {
        self == .grant || !purchase.isFamilyShared
    }
}
