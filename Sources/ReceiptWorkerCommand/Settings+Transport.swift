import AppStoreClient
import CurlHTTP
import Foundation

extension Settings {
    /// The HTTP client for Apple: `APPLE_HTTP_VERSION`, `APPLE_MAX_CONNECTIONS` and `APPSTORE_CA_FILE`, sized for
    /// `maxInFlight` calls at once. `appleURLs` are the App Store URLs configured (setting name, URL): the CA file is
    /// refused unless one of them is `https://` to a loopback host, the only place it applies.
    func appleTransport(maxInFlight: Int, appleURLs: [(setting: String, url: String)]) throws
        -> CurlMultiTransport.Configuration
    {
        let version: CurlMultiTransport.HTTPVersionPolicy
        switch string("APPLE_HTTP_VERSION", flag: nil, default: "2").trimmingCharacters(in: .whitespaces) {
        // Plain http is accepted for loopback hosts only (the fake App Store, tests), which speak HTTP/2 in clear.
        case "2": version = .http2WithLoopbackCleartext
        case "1.1": version = .http1_1
        case let other:
            throw ConfigurationError(.invalid, "APPLE_HTTP_VERSION must be 2 or 1.1, got \"\(other)\"")
        }
        let perHost = environment["APPLE_MAX_CONNECTIONS"].flatMap { $0.isEmpty ? nil : $0 } == nil
            ? nil : try integer("APPLE_MAX_CONNECTIONS", flag: nil, default: 0, minimum: 1)
        var configuration = CurlMultiTransport.Configuration.sized(
            forCallsInFlight: maxInFlight, to: appleURLs.map(\.url), httpVersion: version, maxHostConnections: perHost
        )
        configuration.loopbackCAFile = try loopbackCAFile(appleURLs: appleURLs)
        return configuration
    }

    /// The HTTP client of a command that only calls the App Store Server API a few times (`lookup-order`,
    /// `notifications-replay`), with the same settings as `work`'s.
    func serverAPITransport(_ api: ServerAPIConfiguration) throws -> CurlMultiTransport {
        try CurlMultiTransport(
            configuration: appleTransport(
                maxInFlight: 16,
                appleURLs: [("APPSTORE_API_URL", api.productionURL), ("APPSTORE_SANDBOX_API_URL", api.sandboxURL)]
            )
        )
    }

    /// `APPSTORE_CA_FILE`: a readable PEM file, and a configured App Store URL it applies to.
    private func loopbackCAFile(appleURLs: [(setting: String, url: String)]) throws -> String? {
        guard let path = environment["APPSTORE_CA_FILE"], !path.isEmpty else { return nil }
        guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(.unreadableFile, "APPSTORE_CA_FILE names \(path), which cannot be read")
        }
        guard contents.contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigurationError(
                .invalid, "APPSTORE_CA_FILE (\(path)) holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
            )
        }
        guard appleURLs.contains(where: { URLHost.isHTTPS($0.url) && URLHost.isLoopback($0.url) }) else {
            let names = appleURLs.map(\.setting).joined(separator: ", ")
            throw ConfigurationError(
                .conflict,
                "APPSTORE_CA_FILE is trusted for https to loopback hosts only (tests, fake-appstore --tls), and none of "
                    + "\(names) is one: unset APPSTORE_CA_FILE (Apple's own servers are verified against the system's CAs)"
            )
        }
        return path
    }
}
