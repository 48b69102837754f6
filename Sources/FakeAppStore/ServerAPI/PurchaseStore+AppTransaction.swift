import Foundation

/// App transactions (StoreKit's `AppTransaction`): one per customer, app and environment, signed by the fake's
/// chain at test time, served by Get App Transaction Info.
extension PurchaseStore {
    /// A customer's download of an app, as the fake signed it.
    public struct AppTransaction: Sendable, Hashable {
        public var appTransactionId: String
        public var customerId: String
        public var bundleId: String
        /// receiptType: Production, Sandbox, Xcode or LocalTesting.
        public var environment: String
        /// The JWS (JWSAppTransactionDecodedPayload): what `AppTransaction.shared.jwsRepresentation` gives the app.
        public var signed: String
    }

    /// Signs the app transaction of `customerId` for `bundleId` in `environment` (the one already made for them, with
    /// its appTransactionId, signed again at `now`; else a new one, recorded). `originalApplicationVersion` and
    /// `originalPurchaseDate` describe their first download. With `chain`, it is signed by that chain instead (a
    /// forgery when the chain is not the fake's) and not recorded.
    public func appTransaction(
        customerId: String, bundleId: String, environment: String = "Production",
        originalApplicationVersion: String = "1.0", originalPurchaseDate: Date = Date(timeIntervalSince1970: 1.6e9),
        originalPlatform: String = "iOS", applicationVersion: String = "2.0", now: Date = Date(),
        signedBy chain: SigningChain? = nil
    ) throws(FakeAppStoreError) -> AppTransaction {
        let signedDate = Self.milliseconds(now)
        return try contents.withLock { (contents: inout Contents) throws(FakeAppStoreError) -> AppTransaction in
            let known = contents.appTransactions.first {
                $0.customerId == customerId && $0.bundleId == bundleId && $0.environment == environment
            }
            let id = known?.appTransactionId ?? String(contents.nextTransactionId)
            let payload = FakePayloads.AppTransaction(
                receiptType: environment,
                appAppleId: FakePayloads.appAppleId(bundleId: bundleId, environment: environment),
                bundleId: bundleId, applicationVersion: applicationVersion, receiptCreationDate: signedDate,
                originalPurchaseDate: Self.milliseconds(originalPurchaseDate),
                originalApplicationVersion: originalApplicationVersion, deviceVerification: "ZmFrZQ==",
                deviceVerificationNonce: UUID().uuidString.lowercased(), appTransactionId: id,
                originalPlatform: originalPlatform
            )
            let signed: String
            if let chain {
                do {
                    signed = try JWSSigner(chain: chain).sign(try FakePayloads.json(payload))
                } catch {
                    throw FakeAppStoreError(.signing, "cannot sign with the chain given: \(error)")
                }
                return AppTransaction(
                    appTransactionId: id, customerId: customerId, bundleId: bundleId, environment: environment,
                    signed: signed
                )
            }
            signed = try sign(payload)
            let made = AppTransaction(
                appTransactionId: id, customerId: customerId, bundleId: bundleId, environment: environment,
                signed: signed
            )
            if let index = contents.appTransactions.firstIndex(where: { $0.appTransactionId == id }) {
                contents.appTransactions[index] = made
            } else {
                contents.nextTransactionId += 1
                contents.appTransactions.append(made)
            }
            return made
        }
    }

    /// Get App Transaction Info: the app transaction of the customer who owns `transactionId` (a transaction's id or
    /// the appTransactionId itself) for `bundleId` in `environment`. nil: the id is unknown; `.some(nil)`: the
    /// customer has no app transaction (4040019).
    func appTransaction(for transactionId: String, environment: String, bundleId: String) -> AppTransaction?? {
        contents.withLock { contents in
            let matches = { (app: AppTransaction) in app.environment == environment && app.bundleId == bundleId }
            if let direct = contents.appTransactions.first(where: { $0.appTransactionId == transactionId && matches($0) }) {
                return .some(direct)
            }
            guard let index = contents.indexByTransaction[transactionId] else { return nil }
            let owner = contents.purchases[index]
            guard owner.purchase.environment == environment, owner.purchase.bundleId == bundleId else { return nil }
            return .some(contents.appTransactions.first { $0.customerId == owner.customerId && matches($0) })
        }
    }
}
