import Foundation

/// The App Store Server API side of the fake: production at `apiProductionURL` (`/inApps/...`), the sandbox at
/// `apiSandboxURL` (`/sandbox/inApps/...`), on the verifyReceipt port.
///
/// ```swift
/// var configuration = FakeAppStoreConfiguration(apiKeys: ["KEY1234567": privateKey.publicKey])
/// let server = try FakeAppStoreServer.start(configuration)
/// let added = try server.purchases.add([FakePurchase(bundleId: "com.example.app", productId: "coins.100")])
/// // added[0].signedTransaction is the JWS; its transactionId answers Get Transaction Info in production.
/// ```
extension FakeAppStoreServer {
    /// The base URL of the fake's production App Store Server API (`APPSTORE_API_URL`).
    public var apiProductionURL: String { baseURL }

    /// The base URL of its sandbox (`APPSTORE_SANDBOX_API_URL`).
    public var apiSandboxURL: String { "\(baseURL)/sandbox" }

    /// The purchases and notifications the App Store Server API serves.
    public var purchases: PurchaseStore { state.serverAPI.store }

    /// The chain that signs every transaction and notification.
    public var signingChain: SigningChain { state.serverAPI.chain }

    /// The signing chain's root, DER: trust it (`APPSTORE_ROOT_CERTIFICATES`) to verify what the fake signs.
    public func rootCertificateDER() throws(FakeAppStoreError) -> [UInt8] {
        do {
            return try signingChain.rootDER()
        } catch {
            throw FakeAppStoreError(.signing, "cannot serialize the root certificate: \(error)")
        }
    }

    /// Writes the root certificate (DER) to `path` and returns `path`.
    @discardableResult
    public func writeRootCertificate(to path: String) throws(FakeAppStoreError) -> String {
        try Self.writeRootCertificate(of: signingChain, to: path)
        return path
    }

    /// The next App Store Server API requests get `faults`, one each, in order (after the token check).
    public func injectAPIFaults(_ faults: [ServerAPIFault]) {
        state.serverAPI.enqueue(faults)
    }

    /// Changes the random App Store Server API fault rates.
    public func setAPIFaults(_ rates: ServerAPIFaultRates) {
        state.serverAPI.setFaultRates(rates)
    }

    /// What the App Store Server API answered since the start or the last `resetAPIStats()`.
    /// Every Send Consumption Information request accepted (JWT checked), in arrival order.
    public func consumptionAnswers() -> [FakeConsumptionAnswer] {
        state.serverAPI.receivedConsumptionAnswers
    }

    public func apiStats() -> ServerAPIStats {
        state.serverAPI.currentStats
    }

    public func resetAPIStats() {
        state.serverAPI.resetStats()
    }

    static func signingChain(_ configuration: FakeAppStoreConfiguration) throws(FakeAppStoreError) -> SigningChain {
        if let chain = configuration.signingChain { return chain }
        do {
            return try SigningChain()
        } catch {
            throw FakeAppStoreError(.signing, "cannot make a signing chain: \(error)")
        }
    }

    static func writeRootCertificate(of chain: SigningChain, to path: String) throws(FakeAppStoreError) {
        do {
            try Data(try chain.rootDER()).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw FakeAppStoreError(.signing, "cannot write the root certificate to \(path): \(error)")
        }
    }
}
