/// How the fake App Store serves TLS: with a certificate it makes at start, for these names, issued by an authority
/// it makes too, whose certificate a client must be told to trust.
public struct FakeAppStoreTLS: Sendable {
    /// The names the server certificate is valid for: host names, or IPv4/IPv6 addresses.
    public var names: [String]
    /// Where the authority's certificate (PEM) is written at start, for a client's CA file (`APPSTORE_CA_FILE`); nil
    /// writes none (read it from `FakeAppStoreServer.tlsAuthorityPEM`).
    public var authorityCertificatePath: String?

    public init(names: [String] = ["localhost", "127.0.0.1", "::1"], authorityCertificatePath: String? = nil) {
        self.names = names
        self.authorityCertificatePath = authorityCertificatePath
    }
}
