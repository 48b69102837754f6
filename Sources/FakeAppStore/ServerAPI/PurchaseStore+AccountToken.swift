import Foundation

extension PurchaseStore {
    /// What Set App Account Token found.
    enum AccountTokenChange: Equatable {
        /// The chain's transactions carry the token now, re-signed (its later renewals copy it).
        case set
        /// No purchase of `bundleId` in that environment has that id (4040010).
        case notFound
        /// The id is a transaction's of a chain, not the chain's original one (4000187).
        case notOriginal
    }

    /// Set App Account Token: every transaction of the chain `originalTransactionId` gets `token` (lowercase), each
    /// re-signed, so Get Transaction Info and the next notifications show it. Apple sends no notification for it.
    func setAppAccountToken(
        originalTransactionId: String, token: UUID, environment: String, bundleId: String, now: Date = Date()
    ) throws(FakeAppStoreError) -> AccountTokenChange {
        let milliseconds = Self.milliseconds(now)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> AccountTokenChange in
            guard let index = contents.indexByTransaction[originalTransactionId],
                contents.purchases[index].purchase.environment == environment,
                contents.purchases[index].purchase.bundleId == bundleId
            else { return .notFound }
            guard contents.purchases[index].originalTransactionId == originalTransactionId else { return .notOriginal }
            var draft = contents
            for var signed in contents.purchases where signed.originalTransactionId == originalTransactionId {
                signed.purchase.appAccountToken = token.uuidString.lowercased()
                try resign(signed, in: &draft, signedDate: milliseconds)
            }
            contents = draft
            return .set
        }
    }
}
