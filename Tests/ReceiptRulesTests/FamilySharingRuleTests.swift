import ReceiptRules
import Testing

/// FAMILY_SHARING: grant (the default) credits a purchase a family member shares; reject passes it over, and rejects
/// the job `family_shared` when nothing else is left. The merge believes a copy that says FAMILY_SHARED.
@Suite("Family Sharing in the rules")
struct FamilySharingRuleTests {
    static func shared(_ id: String, at ms: Int64 = Sample.orderTimeMs + Sample.minute) -> Purchase {
        var purchase = Sample.purchase(id, at: ms)
        purchase.inAppOwnershipType = "FAMILY_SHARED"
        return purchase
    }

    static func bought(_ id: String, at ms: Int64 = Sample.orderTimeMs + Sample.minute) -> Purchase {
        var purchase = Sample.purchase(id, at: ms)
        purchase.inAppOwnershipType = "PURCHASED"
        return purchase
    }

    static func configuration(_ policy: FamilySharingPolicy) -> RulesConfiguration {
        RulesConfiguration(bundleIds: [Sample.bundleId], familySharing: policy)
    }

    @Test("grant is the default and credits a shared purchase")
    func grantByDefault() {
        #expect(RulesConfiguration(bundleIds: []).familySharing == .grant)
        let verdict = decide(Sample.receipt([Self.shared("1001")]))
        #expect(verdict.decision == .credit(candidates: [Self.shared("1001")]))
    }

    @Test("reject: a shared purchase is passed over for the user's own, and rejected family_shared when alone")
    func reject() {
        let rejecting = Self.configuration(.reject)
        // The shared one is newer, so it would come first.
        let both = Sample.receipt([Self.bought("1001"), Self.shared("1002", at: Sample.orderTimeMs + 2 * Sample.minute)])
        #expect(decide(both, Sample.order(), rejecting).decision == .credit(candidates: [Self.bought("1001")]))
        #expect(decide(both, Sample.order(), Self.configuration(.grant)).decision
            == .credit(candidates: [Self.shared("1002", at: Sample.orderTimeMs + 2 * Sample.minute), Self.bought("1001")]))

        let alone = decide(Sample.receipt([Self.shared("1002")]), Sample.order(), rejecting)
        #expect(alone.decision.rejection == .familyShared)
        if case .reject(_, let detail) = alone.decision {
            #expect(detail.contains("FAMILY_SHARING=reject") && detail.contains("1002"), "\(detail)")
        }
        // A purchase whose source does not say (an older receipt) is not judged.
        #expect(decide(Sample.receipt([Sample.purchase("1003")]), Sample.order(), rejecting).decision
            == .credit(candidates: [Sample.purchase("1003")]))
    }

    @Test("merged copies: FAMILY_SHARED in either copy wins, whatever the order")
    func merge() {
        let a = Self.bought("1001")
        let b = Self.shared("1001")
        #expect(VerdictRules.merge([a, b]).map(\.inAppOwnershipType) == ["FAMILY_SHARED"])
        #expect(VerdictRules.merge([b, a]).map(\.inAppOwnershipType) == ["FAMILY_SHARED"])
        #expect(VerdictRules.merge([a, Sample.purchase("1001")]).map(\.inAppOwnershipType) == ["PURCHASED"])
    }
}
