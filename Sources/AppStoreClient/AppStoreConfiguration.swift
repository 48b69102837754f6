import CurlHTTP

/// How to reach Apple's verifyReceipt.
public struct AppStoreConfiguration: Sendable {
    /// `APPLE_PRODUCTION_URL`.
    public var productionURL: String
    /// `APPLE_SANDBOX_URL`.
    public var sandboxURL: String
    /// The app's shared secret (`APPLE_SHARED_SECRET` / `APPLE_SHARED_SECRET_FILE`). Never logged.
    public var sharedSecret: String
    /// Total time allowed for one call, connection included (`APPLE_TIMEOUT_SECONDS`).
    public var timeoutSeconds: Double
    /// Time allowed to connect.
    public var connectTimeoutSeconds: Double
    /// The largest answer read; Apple's answers for receipts with hundreds of purchases reach a few hundred KiB.
    public var maxResponseBytes: Int

    public static let appleProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public static let appleSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

    public init(
        productionURL: String = AppStoreConfiguration.appleProductionURL,
        sandboxURL: String = AppStoreConfiguration.appleSandboxURL,
        sharedSecret: String,
        timeoutSeconds: Double = 15,
        connectTimeoutSeconds: Double = 5,
        maxResponseBytes: Int = 16 << 20
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.sharedSecret = sharedSecret
        self.timeoutSeconds = timeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.maxResponseBytes = maxResponseBytes
    }

    public func url(for endpoint: AppStoreEndpoint) -> String {
        endpoint == .production ? productionURL : sandboxURL
    }

    /// HTTPS for Apple; plain http only for loopback addresses (tests and the fake App Store).
    public func validate() throws(AppStoreConfigurationError) {
        try Self.checkURL(productionURL, setting: "APPLE_PRODUCTION_URL")
        try Self.checkURL(sandboxURL, setting: "APPLE_SANDBOX_URL")
        if sharedSecret.isEmpty {
            throw AppStoreConfigurationError(
                .emptySharedSecret, setting: "APPLE_SHARED_SECRET",
                "the shared secret is empty: set APPLE_SHARED_SECRET or APPLE_SHARED_SECRET_FILE"
            )
        }
        if !(timeoutSeconds > 0) || !(connectTimeoutSeconds > 0) {
            throw AppStoreConfigurationError(
                .invalidTimeout, setting: "APPLE_TIMEOUT_SECONDS",
                "APPLE_TIMEOUT_SECONDS must be a positive number of seconds"
            )
        }
    }

    /// Refuses a URL that is not https, except plain http to a loopback host; `name`, the setting, is in the message.
    public static func checkURL(_ url: String, setting name: String) throws(AppStoreConfigurationError) {
        guard let scheme = url.split(separator: ":", maxSplits: 1).first?.lowercased() else {
            throw AppStoreConfigurationError(.invalidURL, setting: name, "\(name) is not a URL: \(url)")
        }
        switch scheme {
        case "https":
            return
        case "http" where isLoopback(url):
            return
        case "http":
            throw AppStoreConfigurationError(
                .insecureURL, setting: name, "\(name) uses plain http to a host that is not loopback (\(url)): use https"
            )
        default:
            throw AppStoreConfigurationError(.invalidURL, setting: name, "\(name) must be an https URL, got \(url)")
        }
    }

    /// Whether a URL's host is a loopback address (127.0.0.0/8, ::1, localhost).
    public static func isLoopback(_ url: String) -> Bool {
        URLHost.isLoopback(url)
    }
}

/// What is wrong with an `AppStoreConfiguration`, naming the setting to fix.
public struct AppStoreConfigurationError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// Not a URL, or a scheme other than http(s).
        case invalidURL
        /// Plain http to a host that is not loopback.
        case insecureURL
        /// No shared secret.
        case emptySharedSecret
        /// A timeout that is not a positive number of seconds.
        case invalidTimeout
        /// Another setting that cannot work (an App Store Server API key, key id, issuer id or rate).
        case invalidSetting
    }

    public var code: Code
    /// The environment variable to fix, e.g. `APPLE_PRODUCTION_URL`.
    public var setting: String
    public var message: String

    public init(_ code: Code, setting: String, _ message: String) {
        self.code = code
        self.setting = setting
        self.message = message
    }

    /// A problem of the App Store Server API settings; the message names the setting and the fix.
    public init(_ message: String, setting: String = "") {
        self.init(.invalidSetting, setting: setting, message)
    }

    public var description: String { message }
}
