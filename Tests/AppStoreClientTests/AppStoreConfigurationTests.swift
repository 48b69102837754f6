import AppStoreClient
import Testing

@Suite("AppStoreConfiguration")
struct AppStoreConfigurationTests {
    static let loopbackURLs = [
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://[::1]:9/x",
        "http://127.1.2.3/verifyReceipt",
        "http://LOCALHOST:1234/verifyReceipt",
        "http://user:pw@127.0.0.1:8080/x",
    ]

    static let remoteURLs = [
        "http://example.com/x",
        "http://10.0.0.1/x",
        "http://127.0.0.1.evil.com/x",
        "http://127.0.0.1.2/x",      // five labels: a host name, not an IPv4 address
        "http://127.0.0.256/x",
        "http://user@evil.com/x",
        "http://127.0.0.1@evil.com/x",
        "http://localhost.evil.com/x",
        "http://128.0.0.1/x",
        "http://[::2]/x",
        "http:///x",
        "not a url",
    ]

    private func configuration(production: String = AppStoreConfiguration.appleProductionURL,
                               sandbox: String = AppStoreConfiguration.appleSandboxURL,
                               secret: String = "0123456789abcdef") -> AppStoreConfiguration {
        AppStoreConfiguration(productionURL: production, sandboxURL: sandbox, sharedSecret: secret)
    }

    @Test("Apple's https URLs are accepted")
    func defaults() throws {
        try configuration().validate()
        #expect(configuration().url(for: .production) == "https://buy.itunes.apple.com/verifyReceipt")
        #expect(configuration().url(for: .sandbox) == "https://sandbox.itunes.apple.com/verifyReceipt")
    }

    @Test("https to any host is accepted, and is the URL each endpoint is asked at", arguments: [
        "https://example.com/x", "HTTPS://10.0.0.1:8443/verifyReceipt",
    ])
    func https(url: String) {
        // Not accepted as loopback: for these hosts only the scheme can make them acceptable.
        #expect(!AppStoreConfiguration.isLoopback(url))
        let configuration = configuration(production: url, sandbox: url)
        #expect(throws: Never.self) { try configuration.validate() }
        #expect(configuration.url(for: .production) == url)
        #expect(configuration.url(for: .sandbox) == url)
        // The same host over plain http is refused: the scheme is what was accepted.
        let plain = "http" + url.dropFirst("https".count)
        #expect(throws: AppStoreConfigurationError.self) { try self.configuration(production: plain).validate() }
    }

    @Test("plain http to loopback is accepted, and is the URL each endpoint is asked at", arguments: loopbackURLs)
    func httpLoopback(url: String) throws {
        #expect(AppStoreConfiguration.isLoopback(url))
        let configuration = configuration(production: url, sandbox: url)
        #expect(throws: Never.self) { try configuration.validate() }
        #expect(configuration.url(for: .production) == url)
        #expect(configuration.url(for: .sandbox) == url)
    }

    @Test("plain http to anything else is refused, naming the variable", arguments: remoteURLs)
    func httpRemote(url: String) throws {
        #expect(!AppStoreConfiguration.isLoopback(url))
        let production = #expect(throws: AppStoreConfigurationError.self) {
            try configuration(production: url).validate()
        }
        #expect(production?.description.contains("APPLE_PRODUCTION_URL") == true, "\(String(describing: production))")
        let sandbox = #expect(throws: AppStoreConfigurationError.self) {
            try configuration(sandbox: url).validate()
        }
        #expect(sandbox?.description.contains("APPLE_SANDBOX_URL") == true, "\(String(describing: sandbox))")
    }

    /// The authority of a URL ends at the first "/", "?" or "#" (RFC 3986 §3.2); libcurl connects to evil.com here
    /// (`curl -v "http://evil.com?@127.0.0.1/x"` says "Could not resolve host: evil.com"), so plain http must be
    /// refused. `isLoopback` only cuts at "/", then takes what follows the last "@" as the host.
    @Test("a \"?\" or \"#\" before an \"@\" does not make a remote host loopback", arguments: [
        "http://evil.com?@127.0.0.1/x",
        "http://evil.com#@127.0.0.1/x",
        "http://evil.com?@localhost",
    ])
    func authorityEndsAtQueryOrFragment(url: String) {
        #expect(!AppStoreConfiguration.isLoopback(url))
        #expect(throws: AppStoreConfigurationError.self) { try configuration(production: url).validate() }
    }

    @Test("a scheme other than http(s) is refused", arguments: ["ftp://127.0.0.1/x", "file:///etc/passwd", ""])
    func otherSchemes(url: String) {
        #expect(throws: AppStoreConfigurationError.self) { try configuration(production: url).validate() }
    }

    @Test("an empty shared secret is refused, naming APPLE_SHARED_SECRET")
    func emptySecret() {
        let error = #expect(throws: AppStoreConfigurationError.self) { try configuration(secret: "").validate() }
        #expect(error?.description.contains("APPLE_SHARED_SECRET") == true, "\(String(describing: error))")
    }

    @Test("timeouts must be positive", arguments: [(0.0, 5.0), (-1, 5), (15, 0), (.nan, 5)])
    func timeouts(total: Double, connect: Double) {
        var configuration = configuration()
        configuration.timeoutSeconds = total
        configuration.connectTimeoutSeconds = connect
        let error = #expect(throws: AppStoreConfigurationError.self) { try configuration.validate() }
        #expect(error?.description.contains("APPLE_TIMEOUT_SECONDS") == true)
    }
}
