/// The App Store Connect API side of the fake: sales reports at `connectAPIURL` + `/v1/salesReports`.
///
/// ```swift
/// let key = P256.Signing.PrivateKey()
/// let server = try FakeAppStoreServer.start(.init(connectAPIKeys: ["CONNECT123": key.publicKey]))
/// // APPSTORE_CONNECT_API_URL=server.connectAPIURL, APPSTORE_VENDOR_NUMBER=server.salesReports.vendorNumber
/// ```
extension FakeAppStoreServer {
    /// The base URL of the fake's App Store Connect API (`APPSTORE_CONNECT_API_URL`).
    public var connectAPIURL: String { baseURL }

    /// The sales reports it serves, made from `purchases`; differences and unready days are planted here.
    public var salesReports: FakeSalesReports { state.serverAPI.salesReports }
}
